"""The publication transaction: all or nothing, idempotent by digest."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

import orjson
from sqlalchemy import Connection, insert, select, update

from kernelindex.catalog.changes import record_changes, touched_operations
from kernelindex.catalog.collector import collector_paused
from kernelindex.catalog.curation import RedeclarationError, check_no_redeclaration, hold_install_lines
from kernelindex.catalog.db import SQLITE_BUSY_TIMEOUT_MS, Catalog
from kernelindex.catalog.models import (
    AttestationRow,
    CatalogStateRow,
    ObjectRow,
    PublicationRow,
    RetractionRow,
    RunRow,
    SupersessionRow,
    TrustedRunnerRow,
)
from kernelindex.catalog.source_tallies import add_publication, add_runs
from kernelindex.domain.canonical import key_id_of
from kernelindex.domain.manifests import Manifest, digest_of, manifest_json
from kernelindex.policy.cohorts import cohort_key, environment_key, primary_latency_ns, run_metric
from kernelindex.policy.source_policy import refusal_of

CHUNK = 500
PUBLISH_WAIT_S = 600  # SQLite: how long a publication waits for another one to finish


class PublishError(ValueError):
    """The batch cannot be published; nothing was written."""


class ImplementationRedeclared(PublishError):
    """A measurement redeclares a catalogued project or implementation (catalog/curation.py)."""


class DuplicateExternalId(PublishError):
    """A bundle's run reuses the external id of a stored run of the same source (issue 51)."""


def run_id_of(digest: str) -> str:
    """The short id used in URLs: the first 16 hex digits of the run's digest."""
    return digest.removeprefix("sha256:")[:16]


@dataclass(frozen=True)
class Attestation:
    bundle_digest: str
    key_id: str
    signature: str


@dataclass
class PublishReport:
    new: Counter = field(default_factory=Counter)
    existing: Counter = field(default_factory=Counter)
    digests: list[str] = field(default_factory=list)
    attested: int = 0  # attestations recorded by this publication

    @property
    def wrote(self) -> bool:
        """Whether this publication changed the catalog (a concurrent twin that lost the race did not)."""
        return bool(self.new) or self.attested > 0

    def to_json(self) -> dict[str, object]:
        return {"new": dict(self.new), "existing": dict(self.existing)}


@dataclass(frozen=True)
class _Item:
    digest: str
    kind: str
    data: dict
    body: str


def _items(manifests: Iterable[Manifest]) -> list[_Item]:
    seen: dict[str, _Item] = {}
    held: dict[int, Manifest] = {}  # by id(); holding each keeps its id from being reused by another
    for manifest in manifests:
        # An importer hands the objects many rows share (source, operation, workload …) once per row;
        # the same object is skipped by identity before any of its (cached, but pydantic-slow) attributes.
        if id(manifest) in held:
            continue
        held[id(manifest)] = manifest
        data = manifest_json(manifest)
        digest = digest_of(manifest)
        if digest not in seen:
            seen[digest] = _Item(digest, data["kind"], data, _stored_json(data))
    return list(seen.values())


def _stored_json(data: dict) -> str:
    # Stored bodies are compact sorted JSON; identity never depends on them (digests are JCS). orjson
    # writes them several times faster than json (manifests hold finite floats and ±2^53 integers; json
    # stays for anything orjson refuses).
    try:
        return orjson.dumps(data, option=orjson.OPT_SORT_KEYS).decode("utf-8")
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _existing(conn: Connection, column, digests: Sequence[str]) -> set[str]:  # noqa: ANN001
    found: set[str] = set()
    for start in range(0, len(digests), CHUNK):
        chunk = list(digests[start : start + CHUNK])
        found.update(conn.execute(select(column).where(column.in_(chunk))).scalars())
    return found


def _object_operation(item: _Item) -> str | None:
    spec = item.data["spec"]
    return spec.get("operation") if item.kind in ("WorkloadCase", "WorkloadSuite", "ImplementationRevision") else None


def _object_row(item: _Item, now: datetime) -> dict:
    return {
        "digest": item.digest,
        "kind": item.kind,
        "name": item.data.get("metadata", {}).get("name"),
        "operation": _object_operation(item),
        "body": item.body,
        "created_at": now,
    }


def _lookup_bodies(conn: Connection, digests: set[str], batch: dict[str, _Item]) -> dict[str, dict]:
    bodies = {d: batch[d].data for d in digests if d in batch}
    missing = sorted(digests - set(bodies))
    for start in range(0, len(missing), CHUNK):
        rows = conn.execute(
            select(ObjectRow.digest, ObjectRow.body).where(ObjectRow.digest.in_(missing[start : start + CHUNK]))
        )
        bodies.update({d: json.loads(b) for d, b in rows})
    return bodies


def _run_row(item: _Item, bodies: dict[str, dict], now: datetime, environment_keys: dict[str, str]) -> dict:
    spec = item.data["spec"]
    timing = spec["timing"]
    runner = spec.get("runner") or {}
    implementation = bodies[spec["implementation"]]
    environment = environment_keys.get(spec["environment"])
    if environment is None:  # a few dozen environments for thousands of runs: hash each once
        environment = environment_keys[spec["environment"]] = environment_key(bodies[spec["environment"]]["spec"])
    return {
        "digest": item.digest,
        "run_id": run_id_of(item.digest),
        "operation": implementation["spec"]["operation"],
        "implementation": spec["implementation"],
        "workload": spec["workload"],
        "protocol": spec["protocol"],
        "environment": spec["environment"],
        "cohort_key": cohort_key(spec["workload"], spec["protocol"], environment, run_metric(spec)),
        "status": spec["status"],
        "median_ns": primary_latency_ns(spec),  # the mean, in a mean cohort (metric latency:mean:ns)
        "p20_ns": timing.get("p20_ns"),
        "p80_ns": timing.get("p80_ns"),
        "observed_at": datetime.fromisoformat(spec["observed_at"].replace("Z", "+00:00")),
        "source": spec["source"]["name"],
        "external_id": spec["source"]["external_id"],
        "runner_key_id": runner.get("key_id"),
        "body": item.body,
        "published_at": now,
    }


def _check_references(runs: list[_Item], bodies: dict[str, dict]) -> None:
    for run in runs:
        spec = run.data["spec"]
        for field_name in ("implementation", "workload", "protocol", "environment"):
            if spec[field_name] not in bodies:
                raise PublishError(
                    f"BenchmarkRun {spec['source']['external_id']}: spec.{field_name} {spec[field_name]} "
                    "is neither in this batch nor in the catalog; publish it first"
                )


def _check_source_policy(runs: list[_Item], refused: Mapping[str, str]) -> None:
    for run in runs:
        if refusal := refusal_of(run.data["spec"]["source"]["name"], refused):
            raise PublishError(f"BenchmarkRun {run.data['spec']['source']['external_id']}: {refusal}")


def _check_external_ids(conn: Connection, runs: list[_Item]) -> None:
    """A bundle's run may not take the external id a stored run of its source holds (one id, one run)."""
    wanted: dict[tuple[str, str], str] = {(i.data["spec"]["source"]["name"], i.data["spec"]["source"]["external_id"]):
                                          i.digest for i in runs}
    ids = sorted({external for _, external in wanted})
    for start in range(0, len(ids), CHUNK):
        held = conn.execute(select(RunRow.source, RunRow.external_id, RunRow.digest, AttestationRow.bundle_digest)
                            .outerjoin(AttestationRow, AttestationRow.run == RunRow.digest)
                            .where(RunRow.external_id.in_(ids[start:start + CHUNK]))).all()
        for source, external, digest, bundle in held:
            mine = wanted.get((source, external))
            if mine is not None and mine != digest:
                where = f"bundle {bundle}" if bundle else "an import (no bundle)"
                raise DuplicateExternalId(
                    f"run {run_id_of(mine)}: external id {external!r} of source {source!r} is already held by run "
                    f"{run_id_of(digest)}, published from {where}; each run needs its own external id (a "
                    "re-measurement is a new run: give it the new campaign's id)")


# Lifecycle facts: their table, and the spec fields stored as its columns (with the digest and ``at``).
_FACT_TABLES: dict[str, tuple[type, tuple[str, ...]]] = {
    "Retraction": (RetractionRow, ("run", "reason", "actor")),
    "Supersession": (SupersessionRow, ("new", "old", "reason", "actor")),
    "TrustedRunner": (TrustedRunnerRow, ("name", "public_key", "trusted_by")),
}


def _fact_rows(items: list[_Item]) -> dict[type, list[dict]]:
    rows: dict[type, list[dict]] = {table: [] for table, _ in _FACT_TABLES.values()}
    for item in items:
        if item.kind not in _FACT_TABLES:
            continue
        table, columns = _FACT_TABLES[item.kind]
        spec = item.data["spec"]
        row = {"digest": item.digest, **{c: spec[c] for c in columns}, "at": _instant(spec["at"])}
        if item.kind == "TrustedRunner":
            row["key_id"] = key_id_of(spec["public_key"])
        rows[table].append(row)
    return rows


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _check_corrections(conn: Connection, items: list[_Item], batch: dict[str, _Item]) -> None:
    wanted = set()
    for item in items:
        spec = item.data["spec"]
        if item.kind == "Retraction":
            wanted.add(spec["run"])
        elif item.kind == "Supersession":
            wanted.update((spec["new"], spec["old"]))
    known = {d for d in wanted if d in batch} | _existing(conn, RunRow.digest, sorted(wanted))
    if missing := sorted(wanted - known):
        raise PublishError(f"correction names run(s) not in the catalog: {', '.join(missing)}")


@collector_paused()
def publish_manifests(
    catalog: Catalog,
    manifests: Iterable[Manifest],
    *,
    actor: str,
    source: str = "manual",
    snapshot_digest: str | None = None,
    locator: str | None = None,
    attestations: dict[str, Attestation] | None = None,
    dry_run: bool = False,
    refused_sources: Mapping[str, str] | None = None,
    kinds: Collection[str] | None = None,
    redeclare: bool = True,
    hold_new_lines: bool = False,
) -> PublishReport:
    """Insert what is new, in one transaction. Re-publishing the same manifests inserts nothing
    and leaves the catalog version alone. Publications are serialised (see ``_publishing``):
    a concurrent one waits, then finds the other's objects already there.
    ``dry_run`` runs every check and count inside the transaction, then rolls it back. ``kinds``, when
    given, are the only manifest kinds this publication may carry (a bundle: a measurement's kinds).
    ``redeclare=False`` (a bundle) refuses any new object that redeclares a catalogued project or
    implementation line (``catalog/curation.py``): ImplementationRedeclared, nothing written; and with
    ``hold_new_lines`` (a runner's uploaded bundle) the install recipe of each implementation line it introduces
    is held for a curator."""
    items = _items(manifests)
    if kinds is not None and (foreign := sorted({i.kind for i in items} - set(kinds))):
        raise PublishError(f"this publication may carry only {', '.join(kinds)}; it carries {', '.join(foreign)}")
    batch = {i.digest: i for i in items}
    report = PublishReport(digests=[i.digest for i in items])
    now = datetime.now(UTC)
    with _publishing(catalog) as conn:
        fresh = _fresh_items(conn, items, report)
        if not redeclare:
            _check_measurement(conn, fresh, snapshot_digest if hold_new_lines else None, now)
        fresh_runs = [i for i in fresh if i.kind == "BenchmarkRun"]
        fresh_facts = [i for i in fresh if i.kind != "BenchmarkRun"]
        refs = {
            i.data["spec"][f] for i in fresh_runs for f in ("implementation", "workload", "protocol", "environment")
        }
        bodies = _lookup_bodies(conn, refs, batch)
        _check_references(fresh_runs, bodies)
        _check_source_policy(fresh_runs, refused_sources or {})
        _check_corrections(conn, fresh_facts, batch)
        _insert(conn, ObjectRow, [_object_row(i, now) for i in fresh_facts])
        environment_keys: dict[str, str] = {}
        _insert(conn, RunRow, [_run_row(i, bodies, now, environment_keys) for i in fresh_runs])
        add_runs(conn, [i.digest for i in fresh_runs])
        for table, rows in _fact_rows(fresh_facts).items():
            _insert(conn, table, rows)
        attested = report.attested = _insert_attestations(conn, attestations or {}, now)
        if fresh or attested:
            _record_publication(conn, report, source, snapshot_digest, locator, actor, now)
            record_changes(conn, touched_operations(conn, [(i.kind, i.digest, i.data) for i in fresh], bodies,
                                                    attestations or {}))
        if dry_run:
            conn.rollback()
    return report


def _check_measurement(conn: Connection, fresh: list[_Item], holding: str | None, now: datetime) -> None:
    """A bundle's new objects: no redeclared implementation, no reused external id; the install lines of the new
    implementation lines it proposes held for a curator when ``holding`` (an uploaded bundle's digest)."""
    try:
        new_lines = check_no_redeclaration(conn, [(i.kind, i.digest, i.data) for i in fresh])
    except RedeclarationError as exc:
        raise ImplementationRedeclared(str(exc)) from None
    _check_external_ids(conn, [i for i in fresh if i.kind == "BenchmarkRun"])
    if holding:
        hold_install_lines(conn, new_lines, holding, now)


def _fresh_items(conn: Connection, items: list[_Item], report: PublishReport) -> list[_Item]:
    """The items not in the catalog yet, counting each as new or existing in ``report``. A
    TrustedRunner for a key that is already trusted counts as existing: a key is trusted once."""
    runs = [i for i in items if i.kind == "BenchmarkRun"]
    others = [i for i in items if i.kind != "BenchmarkRun"]
    known = _existing(conn, ObjectRow.digest, [i.digest for i in others])
    known |= _existing(conn, RunRow.digest, [i.digest for i in runs])
    trusted = _existing(conn, TrustedRunnerRow.key_id, sorted(_key_ids(others)))
    fresh = []
    for item in items:
        key_id = _key_ids([item]).pop() if item.kind == "TrustedRunner" else None
        if item.digest in known or key_id in trusted:
            report.existing[item.kind] += 1
            continue
        if key_id:
            trusted.add(key_id)
        report.new[item.kind] += 1
        fresh.append(item)
    return fresh


def _key_ids(items: list[_Item]) -> set[str]:
    return {key_id_of(i.data["spec"]["public_key"]) for i in items if i.kind == "TrustedRunner"}


@contextmanager
def _publishing(catalog: Catalog) -> Iterator[Connection]:
    """A connection whose transaction holds the catalog's publication lock, so two publications
    never insert the same digests at once. PostgreSQL: the transaction locks the catalog_state row
    (readers are not blocked). SQLite: it starts with BEGIN IMMEDIATE, taking the write lock before
    anything is read, and a concurrent publication waits for it up to PUBLISH_WAIT_S."""
    with catalog.engine.connect() as conn:
        sqlite = conn.dialect.name == "sqlite"
        if sqlite:
            conn.exec_driver_sql(f"PRAGMA busy_timeout = {PUBLISH_WAIT_S * 1000}")
            conn.commit()
        try:
            with conn.begin():
                if sqlite:
                    conn.exec_driver_sql("BEGIN IMMEDIATE")
                else:
                    conn.execute(select(CatalogStateRow.version).where(CatalogStateRow.id == 1).with_for_update())
                yield conn
        finally:
            catalog.written()  # committed or not: the next version read asks the database
            if sqlite:
                conn.exec_driver_sql(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
                conn.commit()


def _record_publication(
    conn: Connection, report: PublishReport, source: str, snapshot: str | None, locator: str | None,
    actor: str, now: datetime,
) -> None:
    conn.execute(update(CatalogStateRow).where(CatalogStateRow.id == 1).values(version=CatalogStateRow.version + 1))
    row = insert(PublicationRow).values(source=source, snapshot_digest=snapshot, locator=locator, actor=actor, at=now,
                                        counts=json.dumps(report.to_json(), sort_keys=True))
    add_publication(conn, conn.execute(row.returning(PublicationRow.id)).scalar_one())


def _insert_attestations(conn: Connection, attestations: dict[str, Attestation], now: datetime) -> int:
    """Record the attestations not recorded yet; returns how many were new."""
    already = _existing(conn, AttestationRow.run, sorted(attestations))
    rows = [{"run": run, "bundle_digest": a.bundle_digest, "key_id": a.key_id, "signature": a.signature,
             "checked_at": now} for run, a in attestations.items() if run not in already]
    _insert(conn, AttestationRow, rows)
    return len(rows)


def _insert(conn: Connection, table: type, rows: list[dict]) -> None:
    for start in range(0, len(rows), CHUNK):
        conn.execute(insert(table), rows[start : start + CHUNK])
