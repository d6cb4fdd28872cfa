"""The file the package ships: the staged export reduced to the rows of publishable sources.

Keeps, in the export's own order, the ``sources`` rows of publishable sources and every run of
those sources with exactly the rows it references (measurements, workload, operation and its
aliases, implementation, project, artifact). Refused sources (SOL-ExecBench), serving tables and
the site's record history are left out, so the package never holds a row it may not publish."""

from __future__ import annotations

import io
import json
from collections import Counter

import zstandard

from kernelindex import registry
from kernelindex.sources.kernelindex_export.read import open_lines


def _publishable_source_ids(rows: list[dict]) -> set[str]:
    ids = set()
    for row in rows:
        policy = registry.source_policy(row["slug"])
        if policy is not None and not policy.refused:
            ids.add(row["id"])
    return ids


def _parse(content: bytes) -> list[tuple[str, dict, str]]:
    return [(json.loads(line)["table"], json.loads(line)["row"], line.rstrip("\n"))
            for line in open_lines(content) if line.strip()]


def _kept_ids(records: list[tuple[str, dict, str]]) -> dict[str, set[str]]:
    sources = _publishable_source_ids([row for table, row, _ in records if table == "sources"])
    by_table: dict[str, dict[str, dict]] = {}
    for table, row, _ in records:
        by_table.setdefault(table, {})[row.get("id", "")] = row
    runs = {r["id"]: r for r in by_table.get("benchmark_runs", {}).values() if r["sourceId"] in sources}
    workloads = {r["workloadId"] for r in runs.values()}
    implementations = {r["implementationId"] for r in runs.values()}
    impl_rows = [by_table["implementations"][i] for i in implementations]
    digests = {((i.get("manifest") or {}).get("spec", {}).get("source") or {}).get("contentDigest") for i in impl_rows}
    return {
        "sources": sources,
        "benchmark_runs": set(runs),
        "workloads": workloads,
        "operations": {by_table["workloads"][w]["operationId"] for w in workloads},
        "implementations": implementations,
        "projects": {i["projectId"] for i in impl_rows},
        "artifact_digests": {d for d in digests if d},
    }


def _keep(table: str, row: dict, kept: dict[str, set[str]]) -> bool:
    if table == "measurements":
        return row["runId"] in kept["benchmark_runs"]
    if table == "operation_aliases":
        return row["operationId"] in kept["operations"]
    if table == "artifacts":
        return row["contentDigest"] in kept["artifact_digests"]
    return table in kept and row.get("id") in kept[table]


def derive_publishable(content: bytes) -> tuple[bytes, Counter]:
    """(zstandard JSON Lines of the publishable rows, rows kept per table)."""
    records = _parse(content)
    kept = _kept_ids(records)
    out = io.StringIO()
    counts: Counter = Counter()
    for table, row, line in records:
        if _keep(table, row, kept):
            out.write(line + "\n")
            counts[table] += 1
    compressed = zstandard.ZstdCompressor(level=19).compress(out.getvalue().encode("utf-8"))
    return compressed, counts
