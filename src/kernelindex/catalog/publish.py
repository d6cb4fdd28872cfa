"""The publication transaction: all or nothing, idempotent by digest."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sqlalchemy import Connection, insert, select, update

from kernelindex.catalog.db import Catalog
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
from kernelindex.domain.canonical import key_id_of
from kernelindex.domain.manifests import Manifest, digest_of, manifest_json
from kernelindex.policy.cohorts import cohort_key, environment_key, primary_latency_ns, run_metric
from kernelindex.policy.source_policy import refusal_of

CHUNK = 500


class PublishError(ValueError):
    """The batch cannot be published; nothing was written."""


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
    for manifest in manifests:
        data = manifest_json(manifest)
        digest = digest_of(manifest)
        if digest not in seen:
            seen[digest] = _Item(digest, data["kind"], data, _stored_json(data))
    return list(seen.values())


def _stored_json(data: dict) -> str:
    # Stored bodies are compact sorted JSON; identity never depends on them (digests are JCS),
    # and the RFC 8785 serializer is too slow to run twice per row on every import.
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


def _run_row(item: _Item, bodies: dict[str, dict], now: datetime) -> dict:
    spec = item.data["spec"]
    timing = spec["timing"]
    runner = spec.get("runner") or {}
    implementation = bodies[spec["implementation"]]
    environment = environment_key(bodies[spec["environment"]]["spec"])
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


def _fact_rows(items: list[_Item]) -> dict[type, list[dict]]:
    rows: dict[type, list[dict]] = {RetractionRow: [], SupersessionRow: [], TrustedRunnerRow: []}
    for item in items:
        spec = item.data["spec"]
        if item.kind == "Retraction":
            rows[RetractionRow].append(
                {
                    "digest": item.digest,
                    "run": spec["run"],
                    "reason": spec["reason"],
                    "actor": spec["actor"],
                    "at": _instant(spec["at"]),
                }
            )
        elif item.kind == "Supersession":
            rows[SupersessionRow].append(
                {
                    "digest": item.digest,
                    "new": spec["new"],
                    "old": spec["old"],
                    "reason": spec["reason"],
                    "actor": spec["actor"],
                    "at": _instant(spec["at"]),
                }
            )
        elif item.kind == "TrustedRunner":
            rows[TrustedRunnerRow].append(
                {
                    "key_id": key_id_of(spec["public_key"]),
                    "digest": item.digest,
                    "name": spec["name"],
                    "public_key": spec["public_key"],
                    "trusted_by": spec["trusted_by"],
                    "at": _instant(spec["at"]),
                }
            )
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
) -> PublishReport:
    """Insert what is new, in one transaction. Re-publishing the same manifests inserts nothing.
    ``dry_run`` runs every check and count inside the transaction, then rolls it back."""
    items = _items(manifests)
    batch = {i.digest: i for i in items}
    report = PublishReport(digests=[i.digest for i in items])
    now = datetime.now(UTC)
    with catalog.engine.connect() as conn, conn.begin() as transaction:
        runs = [i for i in items if i.kind == "BenchmarkRun"]
        others = [i for i in items if i.kind != "BenchmarkRun"]
        known = _existing(conn, ObjectRow.digest, [i.digest for i in others])
        known |= _existing(conn, RunRow.digest, [i.digest for i in runs])
        fresh = [i for i in items if i.digest not in known]
        for item in items:
            (report.existing if item.digest in known else report.new)[item.kind] += 1
        fresh_runs = [i for i in fresh if i.kind == "BenchmarkRun"]
        refs = {
            i.data["spec"][f] for i in fresh_runs for f in ("implementation", "workload", "protocol", "environment")
        }
        bodies = _lookup_bodies(conn, refs, batch)
        _check_references(fresh_runs, bodies)
        _check_source_policy(fresh_runs, refused_sources or {})
        _check_corrections(conn, [i for i in fresh if i.kind != "BenchmarkRun"], batch)
        _insert(conn, ObjectRow, [_object_row(i, now) for i in fresh if i.kind != "BenchmarkRun"])
        _insert(conn, RunRow, [_run_row(i, bodies, now) for i in fresh_runs])
        for table, rows in _fact_rows([i for i in fresh if i.kind != "BenchmarkRun"]).items():
            _insert(conn, table, rows)
        _insert_attestations(conn, attestations or {}, now)
        if fresh or attestations:
            conn.execute(
                update(CatalogStateRow).where(CatalogStateRow.id == 1).values(version=CatalogStateRow.version + 1)
            )
            conn.execute(
                insert(PublicationRow).values(
                    source=source,
                    snapshot_digest=snapshot_digest,
                    locator=locator,
                    actor=actor,
                    at=now,
                    counts=json.dumps(report.to_json(), sort_keys=True),
                )
            )
        if dry_run:
            transaction.rollback()
    return report


def _insert_attestations(conn: Connection, attestations: dict[str, Attestation], now: datetime) -> None:
    already = _existing(conn, AttestationRow.run, sorted(attestations))
    _insert(
        conn,
        AttestationRow,
        [
            {
                "run": run,
                "bundle_digest": a.bundle_digest,
                "key_id": a.key_id,
                "signature": a.signature,
                "checked_at": now,
            }
            for run, a in attestations.items()
            if run not in already
        ],
    )


def _insert(conn: Connection, table: type, rows: list[dict]) -> None:
    for start in range(0, len(rows), CHUNK):
        conn.execute(insert(table), rows[start : start + CHUNK])
