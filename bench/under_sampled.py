"""Issue 19 item 3: how many shipped verified runs took fewer samples than their protocol's minimum, and
what the eligibility rule takes out of the rankings and records. Reads the bundles' manifests only (no
catalog, no GPU); cohorts grouped as the catalog groups them (workload, protocol, environment).

    .venv/bin/python bench/under_sampled.py
"""

from __future__ import annotations

import json
from collections import defaultdict

from kernelindex.domain.manifests import digest_of, parse_manifest
from kernelindex.trust.bundles import bundled_bundles


def _documents() -> list[dict]:
    return [json.loads(line) for path in bundled_bundles()
            for line in (path / "manifests.jsonl").read_text(encoding="utf-8").splitlines()]


def main() -> None:
    documents = _documents()
    minimum = {}
    for d in documents:
        if d["kind"] == "BenchmarkProtocol":
            minimum[digest_of(parse_manifest(d))] = d["spec"]["repetitions"].get("count")
    runs = [d["spec"] for d in documents if d["kind"] == "BenchmarkRun" and d["spec"]["status"] == "passed"]
    runs = list({r["source"]["external_id"] + r["observed_at"]: r for r in runs}.values())  # one per run

    def short(run: dict) -> bool:
        return run["timing"]["samples"] < (run["timing"].get("min_samples") or minimum[run["protocol"]] or 0)

    cohorts: dict[tuple, list[dict]] = defaultdict(list)
    for run in runs:
        cohorts[(run["workload"], run["protocol"], run["environment"])].append(run)
    holders = [min(c, key=lambda r: r["timing"]["median_ns"]) for c in cohorts.values()]
    by_operation: dict[str, list[bool]] = defaultdict(list)
    for run in runs:
        by_operation[run["source"]["external_id"].split("/")[1]].append(short(run))
    worded = sum(1 for r in runs if not short(r) and "before min_samples" in r["timing"]["raw"].get("stop_reason", ""))
    print(f"bundles {len(bundled_bundles())}, passed runs {len(runs)}, cohorts {len(cohorts)}")
    print(f"under-sampled runs: {sum(map(short, runs))}; samples of those: "
          f"min {min(r['timing']['samples'] for r in runs if short(r))}, "
          f"max {max(r['timing']['samples'] for r in runs if short(r))}")
    print(f"cohorts whose #1 (lowest median) is under-sampled: {sum(map(short, holders))}")
    print(f"runs with >= the minimum but a 'before min_samples' stop reason (stay eligible): {worded}")
    print("operations with no eligible verified run left: "
          + ", ".join(sorted(op for op, flags in by_operation.items() if all(flags))))


if __name__ == "__main__":
    main()
