"""The catalog as JSON Lines, one manifest per line, sources (license, attribution) first.
Re-importing the export into an empty catalog reproduces the same digests."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, TextIO

from sqlalchemy import Connection, func, select

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.files import check_regular_file
from kernelindex.catalog.models import CatalogStateRow, ObjectRow, RunRow
from kernelindex.catalog.publish import PublishReport, publish_manifests
from kernelindex.domain.canonical import MAX_DOCUMENT_BYTES
from kernelindex.domain.manifests import MAX_PROBLEMS, ManifestError, parse_manifest_text
from kernelindex.policy.source_policy import PolicySplit, split_refused

MAX_JSONL_BYTES = 1024 * 1024 * 1024  # a whole catalog's `ki export` is tens of MB
MAX_JSONL_LINES = 5_000_000  # blank ones too: a file of newlines must not loop for hours

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
        yield from _lines(conn)


def write_export_snapshot(catalog: Catalog, handle: TextIO) -> int:
    """Write the whole catalog as JSON Lines to ``handle`` from one read snapshot, and return the catalog
    version that snapshot holds: a publication committing meanwhile is wholly in it or wholly out
    (PostgreSQL: a REPEATABLE READ transaction; SQLite: one deferred read transaction in WAL mode)."""
    with catalog.engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql("BEGIN")  # pysqlite begins nothing before a SELECT: take the snapshot here
        else:  # the transaction begins at the first statement, at this level
            conn.execution_options(isolation_level="REPEATABLE READ")
        try:
            version = conn.execute(select(CatalogStateRow.version).where(CatalogStateRow.id == 1)).scalar_one()
            for line in _lines(conn):
                handle.write(line)
                handle.write("\n")
        finally:
            conn.rollback()
    return int(version)


def _lines(conn: Connection) -> Iterator[str]:
    """Sources and objects by kind, then runs by time, then lifecycle facts, each ordered by digest."""
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


def export_size(catalog: Catalog) -> int:
    """About how many bytes ``write_export_snapshot`` writes now: the characters of the lines it writes (a
    character outside ASCII takes more than one byte), said beside the download links before the file
    exists. Reads no body into Python: one sum per table."""
    kinds = (*KIND_ORDER, *FACT_KINDS)
    with catalog.engine.connect() as conn:
        objects = conn.execute(select(func.sum(func.length(ObjectRow.body) + 1))
                               .where(ObjectRow.kind.in_(kinds))).scalar() or 0
        runs = conn.execute(select(func.sum(func.length(RunRow.body) + 1))).scalar() or 0
    return int(objects) + int(runs)


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


def _bounded_lines(handle: BinaryIO) -> Iterator[tuple[int, bytes | None]]:
    """(line number, bytes) per line, never holding more than one line's limit in memory; a
    line over MAX_DOCUMENT_BYTES comes back as None (and is skipped to its end unread)."""
    number = 0
    while raw := handle.readline(MAX_DOCUMENT_BYTES + 2):  # the line, its CR LF
        number += 1
        if len(raw) <= MAX_DOCUMENT_BYTES or raw.endswith(b"\n"):
            yield number, raw
            continue
        while (rest := handle.readline(1 << 20)) and not rest.endswith(b"\n"):
            pass
        yield number, None


@dataclass
class JsonlReport:
    """What a JSON Lines import stored, and what the source policy refused (never stored)."""

    published: PublishReport
    policy: PolicySplit = field(default_factory=PolicySplit)

    def to_json(self) -> dict[str, object]:
        return {
            **self.published.to_json(),
            "refused_by_source_policy": {
                name: {"runs": self.policy.refused_runs[name], "reason": reason}
                for name, reason in sorted(self.policy.reasons.items())
            },
            "refused_objects": dict(self.policy.refused_objects),
        }


def import_jsonl(
    catalog: Catalog,
    path: Path,
    *,
    actor: str,
    refused: Mapping[str, str],
    listed: Collection[str] | None = None,
    dry_run: bool = False,
) -> JsonlReport:
    """Every line must be a valid manifest; one bad line refuses the file (named with its line
    number). The first MAX_PROBLEMS problems are listed, the rest counted. Runs of a source the
    policy refuses (``refused``: name → reason; ``listed``: every source the policy names) are
    counted and never stored, with the objects only they used (policy.source_policy.split_refused)."""
    check_regular_file(path, MAX_JSONL_BYTES, JsonlError, give="a `ki export` file",
                       limit_of="`ki import jsonl`; split it into files under the limit")
    manifests = []
    problems: list[str] = []
    count = 0
    with path.open("rb") as handle:
        for number, raw in _bounded_lines(handle):
            if number > MAX_JSONL_LINES:
                raise JsonlError(f"{path}:{number}: more than {MAX_JSONL_LINES:,} lines; split it into smaller files")
            if raw is not None and not raw.strip():
                continue
            try:
                if raw is None:
                    raise ManifestError(f"{path}:{number}", [f"line is over the {MAX_DOCUMENT_BYTES:,}-byte limit"])
                manifests.append(parse_manifest_text(raw, f"{path}:{number}"))
            except ManifestError as exc:
                count += 1
                if len(problems) < MAX_PROBLEMS:
                    problems.append(str(exc))
    if count:
        more = f"\n… and {count - len(problems):,} more" if count > len(problems) else ""
        raise JsonlError(f"{count:,} invalid line(s); nothing imported:\n" + "\n".join(problems) + more)
    split = split_refused(manifests, refused, listed)
    published = publish_manifests(catalog, split.kept, actor=actor, source=f"jsonl:{path.name}", locator=str(path),
                                  dry_run=dry_run, refused_sources=refused)
    return JsonlReport(published, split)
