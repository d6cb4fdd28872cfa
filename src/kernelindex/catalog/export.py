"""The catalog as JSON Lines, one manifest per line, sources (license, attribution) first.
Re-importing the export into an empty catalog reproduces the same digests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import select

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import ObjectRow, RunRow
from kernelindex.catalog.publish import PublishReport, publish_manifests
from kernelindex.domain.manifests import ManifestError, parse_manifest_text

KIND_ORDER = (
    "Source",
    "TrustedRunner",
    "OperationSpec",
    "SoftwareProject",
    "ImplementationRevision",
    "WorkloadCase",
    "WorkloadSuite",
    "BenchmarkProtocol",
    "ExecutionEnvironment",
)
FACT_KINDS = ("Retraction", "Supersession")


def export_lines(catalog: Catalog) -> Iterator[str]:
    with catalog.engine.connect() as conn:
        for kind in KIND_ORDER:
            for body in conn.execute(
                select(ObjectRow.body).where(ObjectRow.kind == kind).order_by(ObjectRow.digest)
            ).scalars():
                yield body
        for body in conn.execute(select(RunRow.body).order_by(RunRow.observed_at, RunRow.digest)).scalars():
            yield body
        for kind in FACT_KINDS:
            for body in conn.execute(
                select(ObjectRow.body).where(ObjectRow.kind == kind).order_by(ObjectRow.digest)
            ).scalars():
                yield body


def source_header_lines(catalog: Catalog) -> list[str]:
    """One line per source in the export: its name, data license and attribution. The export's
    first lines are these sources' manifests; the CLI also prints these lines for people."""
    with catalog.engine.connect() as conn:
        bodies = conn.execute(select(ObjectRow.body).where(ObjectRow.kind == "Source").order_by(ObjectRow.digest))
        specs = [json.loads(b)["spec"] for b in bodies.scalars()]
    return [f"source {s['name']} · data license {s['license']} · {s['attribution']}" for s in specs]


def write_export(catalog: Catalog, path: Path) -> int:
    count = 0
    with path.open("w", encoding="utf-8") as handle:
        for line in export_lines(catalog):
            handle.write(line + "\n")
            count += 1
    return count


class JsonlError(ValueError):
    pass


def import_jsonl(catalog: Catalog, path: Path, *, actor: str, dry_run: bool = False) -> PublishReport:
    """Every line must be a valid manifest; one bad line refuses the file (named with its line number)."""
    manifests = []
    problems: list[str] = []
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                manifests.append(parse_manifest_text(raw, f"{path}:{number}"))
            except ManifestError as exc:
                problems.append(str(exc))
    if problems:
        shown = "\n".join(problems[:20])
        raise JsonlError(f"{len(problems)} invalid line(s); nothing imported:\n{shown}")
    return publish_manifests(
        catalog, manifests, actor=actor, source=f"jsonl:{path.name}", locator=str(path), dry_run=dry_run
    )
