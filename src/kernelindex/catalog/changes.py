"""Which operations a publication changes, recorded with the catalog version it makes, so a reader
reloads only those operations (``readmodel/versions.py``) instead of everything.

Objects are content-addressed and never change, so a new object matters to an operation only when
something of that operation names it: a run, its implementation, its workload, or a correction of
one of its runs. A protocol is named only by runs (a publication refuses a run whose references are
missing), so it touches nothing by itself; a project, the operations whose stored implementations name
it (an implementation may come before its project). Every operation changes with a trusted runner key or a
source's manifest (they change how every run reads).

What can move a GPU's attainable bandwidth (``readmodel/attainable.py``), which the attainable floor
of every operation on that GPU divides by — an environment (its measured ceilings), an attested run,
a correction of an attested run — is recorded under ``MAY_MOVE_ATTAINABLE`` beside the operations it
touches: readers recompute the figures and reload the answers of the operations whose GPUs' figures
actually moved, not every operation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import Connection, insert, select

from kernelindex.catalog.models import AttestationRow, CatalogChangeRow, CatalogStateRow, ObjectRow, RunRow

OF_ITS_OPERATION = frozenset({"WorkloadCase", "WorkloadSuite", "ImplementationRevision"})
NAMED_BY_RUNS = frozenset({"BenchmarkProtocol"})
NO_OPERATION = ""  # a version that changed no operation (a protocol alone); NULL: every operation
MAY_MOVE_ATTAINABLE = "@attainable"  # a version that may have moved a GPU's attainable bandwidth (no slug has "@")


def touched_operations(conn: Connection, fresh: Iterable[tuple[str, str, dict]], bodies: Mapping[str, dict],
                       attested_runs: Iterable[str]) -> set[str] | None:
    """The digests of the operations these new items (kind, digest, manifest JSON) change; None: every
    operation. ``bodies``: the manifests the new runs name, by digest. ``MAY_MOVE_ATTAINABLE`` among
    them: the items may move a GPU's attainable bandwidth."""
    touched: set[str] = set()
    runs: set[str] = set()
    projects: set[str] = set()
    if any(True for _ in attested_runs):  # verified runs may raise a GPU's attainable bandwidth
        touched.add(MAY_MOVE_ATTAINABLE)
    for kind, digest, data in fresh:
        spec = data["spec"]
        if kind == "BenchmarkRun":
            touched.add(bodies[spec["implementation"]]["spec"]["operation"])
        elif kind == "OperationSpec":
            touched.add(digest)
        elif kind in OF_ITS_OPERATION:
            touched.add(spec["operation"])
        elif kind == "Retraction":
            runs.add(spec["run"])
        elif kind == "Supersession":
            runs.update((spec["new"], spec["old"]))
        elif kind == "ExecutionEnvironment":  # named only by runs; its measured ceilings may raise a bandwidth
            touched.add(MAY_MOVE_ATTAINABLE)
        elif kind == "SoftwareProject":  # an implementation may be stored before the project it names
            projects.add(digest)
        elif kind not in NAMED_BY_RUNS:
            return None
    if _any_attested(conn, runs):  # correcting a verified run may lower it
        touched.add(MAY_MOVE_ATTAINABLE)
    return touched | _operations_of_runs(conn, runs) | _operations_naming(conn, projects)


def _any_attested(conn: Connection, runs: set[str]) -> bool:
    ordered = sorted(runs)
    return any(conn.execute(select(AttestationRow.run).where(AttestationRow.run.in_(ordered[start:start + 500]))
                            .limit(1)).first() for start in range(0, len(ordered), 500))


def _operations_of_runs(conn: Connection, runs: set[str]) -> set[str]:
    ordered = sorted(runs)
    found: set[str] = set()
    for start in range(0, len(ordered), 500):
        found.update(conn.execute(select(RunRow.operation).where(RunRow.digest.in_(ordered[start:start + 500])))
                     .scalars())
    return found


def _operations_naming(conn: Connection, projects: set[str]) -> set[str]:
    """The operations of the stored implementations that name one of these projects (a new project is
    rare: one text search of the implementations each)."""
    found: set[str] = set()
    for project in sorted(projects):
        found.update(o for o in conn.execute(
            select(ObjectRow.operation).where(ObjectRow.kind == "ImplementationRevision",
                                              ObjectRow.body.contains(project, autoescape=True)).distinct()
        ).scalars() if o is not None)
    return found


def record_changes(conn: Connection, touched: set[str] | None) -> None:
    """Record what the version this transaction made changed (call after bumping it)."""
    version = conn.execute(select(CatalogStateRow.version).where(CatalogStateRow.id == 1)).scalar_one()
    names: list[Any] = [None] if touched is None else sorted(touched) or [NO_OPERATION]
    conn.execute(insert(CatalogChangeRow), [{"version": version, "operation": name} for name in names])


def changes_between(conn: Connection, after: int, upto: int) -> list[tuple[int, str | None]]:
    """(version, operation slug, ``MAY_MOVE_ATTAINABLE``, or None for every operation) for the versions
    in (after, upto]. A version no row names (written by something that did not say) counts as every operation; an
    operation the catalog cannot name counts as every operation too."""
    rows = conn.execute(
        select(CatalogChangeRow.version, CatalogChangeRow.operation, ObjectRow.name)
        .outerjoin(ObjectRow, ObjectRow.digest == CatalogChangeRow.operation)
        .where(CatalogChangeRow.version > after, CatalogChangeRow.version <= upto)
    ).all()
    changes: list[tuple[int, str | None]] = []
    for version, operation, name in rows:
        if operation == MAY_MOVE_ATTAINABLE:
            changes.append((version, MAY_MOVE_ATTAINABLE))
        elif operation != NO_OPERATION:
            changes.append((version, name if operation is not None else None))
    said = {version for version, _, _ in rows}
    changes.extend((version, None) for version in range(after + 1, upto + 1) if version not in said)
    return changes
