"""Catalog reads that are not a page: the stored operation manifests (the resolver's vocabulary),
an operation's workload cases (the runner's cases), and the export. Everything
outside ``catalog/`` reads the catalog through ``readmodel/``; these are the reads no page makes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TextIO

from sqlalchemy import func, select

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.export import export_lines as _export_lines
from kernelindex.catalog.export import write_export_snapshot as _write_export_snapshot
from kernelindex.catalog.models import AttestationRow, ObjectRow, RunRow
from kernelindex.domain.manifests import (
    ExecutionEnvironment,
    WorkloadCase,
    as_kind,
    digest_of,
    parse_manifest_text,
)


def operation_bodies(catalog: Catalog) -> dict[str, bytes]:
    """slug → the stored manifest (its JSON, as written once validated) of every named operation in the catalog."""
    with catalog.engine.connect() as conn:
        rows = conn.execute(select(ObjectRow.name, ObjectRow.body).where(ObjectRow.kind == "OperationSpec")).all()
    return {name: body.encode() if isinstance(body, str) else body for name, body in rows if name}


def workload_cases(
    catalog: Catalog, operation: str, *, measured_by_other_than: str | None = None
) -> list[WorkloadCase]:
    """The WorkloadCases of the operation with digest ``operation``; with ``measured_by_other_than``,
    only those with a run from another source (the reference cases, e.g. the imported Liger ones)."""
    query = select(ObjectRow.body).where(ObjectRow.kind == "WorkloadCase", ObjectRow.operation == operation)
    if measured_by_other_than is not None:
        sourced = select(RunRow.workload).where(RunRow.operation == operation,
                                                RunRow.source != measured_by_other_than).distinct()
        query = query.where(ObjectRow.digest.in_(sourced))
    with catalog.engine.connect() as conn:
        bodies = conn.execute(query).scalars().all()
    return [as_kind(parse_manifest_text(body, "catalog WorkloadCase"), WorkloadCase) for body in bodies]


def environments_by_digest(catalog: Catalog, digests: set[str]) -> dict[str, ExecutionEnvironment]:
    """The stored execution environments with these digests."""
    ordered = sorted(digests)
    found: dict[str, ExecutionEnvironment] = {}
    with catalog.engine.connect() as conn:
        for start in range(0, len(ordered), 500):
            rows = conn.execute(select(ObjectRow.digest, ObjectRow.body).where(
                ObjectRow.kind == "ExecutionEnvironment", ObjectRow.digest.in_(ordered[start:start + 500])))
            found.update((digest, ExecutionEnvironment.model_validate_json(body)) for digest, body in rows)
    return found


def verified_operation_slugs(catalog: Catalog) -> list[str]:
    """The slugs of the operations that hold at least one attested (runner-verified) run, sorted."""
    attested = select(RunRow.operation).join(AttestationRow, AttestationRow.run == RunRow.digest).distinct()
    with catalog.engine.connect() as conn:
        names = conn.execute(select(ObjectRow.name).where(ObjectRow.digest.in_(attested))).scalars().all()
    return sorted(name for name in names if name)


def software_project_digests(catalog: Catalog) -> dict[str, str]:
    """name → digest of every SoftwareProject the catalog holds."""
    with catalog.engine.connect() as conn:
        bodies = conn.execute(select(ObjectRow.body).where(ObjectRow.kind == "SoftwareProject")).scalars().all()
    projects = [parse_manifest_text(body, "catalog SoftwareProject") for body in bodies]
    return {p.metadata.name or "": digest_of(p) for p in projects}


def run_counts(catalog: Catalog) -> tuple[int, int]:
    """(runs, sources they come from) in the catalog."""
    query = select(func.count(), func.count(func.distinct(RunRow.source))).select_from(RunRow)
    with catalog.engine.connect() as conn:
        runs, sources = conn.execute(query).one()
    return runs, sources


def export_lines(catalog: Catalog) -> Iterator[str]:
    """The whole catalog as JSON Lines (sources first, then objects, runs and lifecycle facts)."""
    yield from _export_lines(catalog)


def write_export_snapshot(catalog: Catalog, handle: TextIO) -> int:
    """The export written from one read snapshot; returns the catalog version it holds."""
    return _write_export_snapshot(catalog, handle)
