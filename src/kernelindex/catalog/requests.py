"""Measurement requests and their replicas: storage, merging, leases.

A request is one workload on one GPU product; it has ``replicas`` replicas, each measured by a
different runner identity. A replica goes open → claimed (a lease held by one runner key, renewed by
heartbeats) → done (with the bundle that fulfilled it) or failed (with the failure). A lease that is
not renewed expires and the replica can be claimed again. Claims are conditional updates (the row
changes only if it is still claimable), so two runners never hold the same replica; on PostgreSQL the
candidate rows are read ``FOR UPDATE SKIP LOCKED`` so concurrent runners do not queue on each other.
A unique index on (request, runner key) keeps one runner from taking two replicas of one request.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, and_, exists, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import aliased

from kernelindex import urls
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import AttestationRow, MeasurementRequestRow, ObjectRow, RequestReplicaRow, RunRow
from kernelindex.domain.instants import as_utc

OPEN, CLAIMED, DONE, FAILED = "open", "claimed", "done", "failed"


class LeaseLost(LookupError):
    """The claim token no longer holds the replica (the lease expired and another runner took it)."""


class UnknownRequest(LookupError):
    pass


@dataclass
class Replica:
    replica: int
    state: str
    runner: str | None
    runner_key_id: str | None
    lease_until: datetime | None
    claimed_at: datetime | None
    finished_at: datetime | None
    bundle_digest: str | None
    failure: str | None
    attempts: int

    def to_json(self) -> dict[str, Any]:
        return {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in self.__dict__.items()}


@dataclass
class MeasurementRequest:
    id: int
    digest: str
    operation: str
    gpu: str
    spec: dict[str, Any]
    workload: dict[str, Any]
    askers: int
    state: str
    created_at: datetime
    updated_at: datetime
    replicas: list[Replica] = field(default_factory=list)

    def age_seconds(self, now: datetime) -> float:
        return max(0.0, (now - self.created_at).total_seconds())

    def to_json(self, now: datetime) -> dict[str, Any]:
        """The request as the API shows it; ``now`` (the app's clock) gives its age."""
        return {"id": self.id, "digest": self.digest, "operation": self.operation, "gpu": self.gpu,
                "request": self.spec, "workload": self.workload, "askers": self.askers, "state": self.state,
                "created_at": self.created_at.isoformat(), "updated_at": self.updated_at.isoformat(),
                "age_seconds": round(self.age_seconds(now)), "replicas": [r.to_json() for r in self.replicas],
                "url": urls.api(urls.measurement_request(self.id))}


@dataclass(frozen=True)
class Claim:
    request: MeasurementRequest
    replica: int
    token: str
    lease_until: datetime


_WRITES: dict[str, int] = {}  # catalog URL → how many request writes this process made


def writes_here(catalog: Catalog) -> int:
    """How many times this process filed, merged, claimed or finished a request in ``catalog``: a reader
    holding the listing reads it again as soon as this moves (another process's writes show in
    ``requests_stamp``)."""
    return _WRITES.get(catalog.url, 0)


def _wrote(catalog: Catalog) -> None:
    _WRITES[catalog.url] = _WRITES.get(catalog.url, 0) + 1


def requests_stamp(catalog: Catalog) -> tuple[int, str | None]:
    """What moves whenever a request is filed, merged, claimed or finished, by any process: how many there
    are and when the latest of them changed (every such write sets the request's ``updated_at``)."""
    with catalog.engine.connect() as conn:
        count, latest = conn.execute(select(func.count(), func.max(MeasurementRequestRow.updated_at))).one()
    return count, latest.isoformat() if latest is not None else None


def submit(catalog: Catalog, *, spec: dict[str, Any], digest: str, workload: dict[str, Any]) -> tuple[
        MeasurementRequest, bool]:
    """Store a request, or merge it into the identical open one (its askers count goes up).
    Returns the request and whether it merged."""
    try:
        return _submit(catalog, spec, digest, workload)
    finally:  # committed (or not: reading the listing again costs one read)
        _wrote(catalog)


def _submit(catalog: Catalog, spec: dict[str, Any], digest: str, workload: dict[str, Any]) -> tuple[
        MeasurementRequest, bool]:
    for _ in range(3):
        now = datetime.now(UTC)
        with catalog.engine.begin() as conn:
            merged = conn.execute(
                update(MeasurementRequestRow).where(MeasurementRequestRow.open_key == digest)
                .values(askers=MeasurementRequestRow.askers + 1, updated_at=now)
            ).rowcount
            if merged:
                request_id = conn.execute(select(MeasurementRequestRow.id)
                                          .where(MeasurementRequestRow.open_key == digest)).scalar_one()
                return _get(conn, request_id), True
        try:
            with catalog.engine.begin() as conn:
                request_id = _insert(conn, spec, digest, workload, now)
                return _get(conn, request_id), False
        except IntegrityError:  # an identical request was stored meanwhile: merge into it
            continue
    raise RuntimeError("could not store or merge the request after 3 attempts")


def _insert(conn: Connection, spec: dict[str, Any], digest: str, workload: dict[str, Any], now: datetime) -> int:
    body = json.dumps({"request": spec, "workload": workload}, sort_keys=True)
    request_id = conn.execute(
        insert(MeasurementRequestRow).values(
            digest=digest, open_key=digest, operation=spec["operation"], gpu=spec["gpu"], body=body,
            replicas=spec["replicas"], askers=1, state=OPEN, created_at=now, updated_at=now,
        ).returning(MeasurementRequestRow.id)
    ).scalar_one()
    conn.execute(insert(RequestReplicaRow), [
        {"request_id": request_id, "replica": n, "state": OPEN, "attempts": 0} for n in range(1, spec["replicas"] + 1)
    ])
    return int(request_id)


def get(catalog: Catalog, request_id: int) -> MeasurementRequest:
    with catalog.engine.connect() as conn:
        return _get(conn, request_id)


def _get(conn: Connection, request_id: int) -> MeasurementRequest:
    row = conn.execute(select(MeasurementRequestRow).where(MeasurementRequestRow.id == request_id)).first()
    if row is None:
        raise UnknownRequest(f"no measurement request {request_id}")
    replicas = conn.execute(select(RequestReplicaRow).where(RequestReplicaRow.request_id == request_id)
                            .order_by(RequestReplicaRow.replica)).all()
    return _request(row, replicas)


def _request(row: Any, replica_rows: Sequence[Any]) -> MeasurementRequest:
    body = json.loads(row.body)
    now = datetime.now(UTC)
    replicas = [Replica(r.replica, _effective(r.state, as_utc(r.lease_until), now), r.runner_name, r.runner_key_id,
                        as_utc(r.lease_until), as_utc(r.claimed_at), as_utc(r.finished_at), r.bundle_digest,
                        r.failure, r.attempts)
                for r in replica_rows]
    state = _state_of({r.state for r in replicas}) if replicas else row.state
    return MeasurementRequest(row.id, row.digest, row.operation, row.gpu, body["request"], body["workload"],
                              row.askers, state, as_utc(row.created_at) or now, as_utc(row.updated_at) or now,
                              replicas)


def _effective(state: str, lease_until: datetime | None, now: datetime) -> str:
    """A claim whose lease ran out is open again, whatever the row still says."""
    return OPEN if state == CLAIMED and lease_until is not None and lease_until < now else state


def _state_of(found: set[str]) -> str:
    if found <= {DONE}:
        return DONE
    if found <= {DONE, FAILED}:
        return FAILED
    return CLAIMED if CLAIMED in found else OPEN


def list_requests(catalog: Catalog, *, state: str | None = None, limit: int = 200) -> list[MeasurementRequest]:
    """Requests, newest first; ``state`` filters (open, claimed, done, failed)."""
    query = select(MeasurementRequestRow).order_by(MeasurementRequestRow.id.desc()).limit(limit)
    if state:
        query = query.where(MeasurementRequestRow.state == state)
    with catalog.engine.connect() as conn:
        rows = conn.execute(query).all()
        replicas: dict[int, list[Any]] = {}
        ids = [r.id for r in rows]
        if ids:
            for rep in conn.execute(select(RequestReplicaRow).where(RequestReplicaRow.request_id.in_(ids))
                                    .order_by(RequestReplicaRow.replica)):
                replicas.setdefault(rep.request_id, []).append(rep)
    return [_request(r, replicas.get(r.id, [])) for r in rows]


def claim(catalog: Catalog, *, gpu: str, runner_key_id: str, runner_name: str, lease_seconds: float,
          operations: list[str] | None = None) -> Claim | None:
    """Claim one claimable replica of the oldest request for ``gpu`` that this runner has not served."""
    try:
        return _claim(catalog, gpu, runner_key_id, runner_name, lease_seconds, operations)
    finally:
        _wrote(catalog)


def _claim(catalog: Catalog, gpu: str, runner_key_id: str, runner_name: str, lease_seconds: float,
           operations: list[str] | None) -> Claim | None:
    now = datetime.now(UTC)
    mine = aliased(RequestReplicaRow)
    claimable = or_(RequestReplicaRow.state == OPEN,
                    and_(RequestReplicaRow.state == CLAIMED, RequestReplicaRow.lease_until < now))
    served = exists().where(mine.request_id == RequestReplicaRow.request_id, mine.replica != RequestReplicaRow.replica,
                            mine.runner_key_id == runner_key_id)
    query = (
        select(RequestReplicaRow.request_id, RequestReplicaRow.replica)
        .join(MeasurementRequestRow, MeasurementRequestRow.id == RequestReplicaRow.request_id)
        .where(MeasurementRequestRow.gpu == gpu, MeasurementRequestRow.state.in_((OPEN, CLAIMED)), claimable, ~served)
        .order_by(MeasurementRequestRow.id, RequestReplicaRow.replica).limit(20)
    )
    if operations:
        query = query.where(MeasurementRequestRow.operation.in_(operations))
    with catalog.engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            query = query.with_for_update(of=RequestReplicaRow, skip_locked=True)
        for request_id, replica in conn.execute(query).all():
            token = secrets.token_hex(16)
            lease_until = now + timedelta(seconds=lease_seconds)
            try:
                with conn.begin_nested():
                    taken = conn.execute(
                        update(RequestReplicaRow)
                        .where(RequestReplicaRow.request_id == request_id, RequestReplicaRow.replica == replica,
                               claimable)
                        .values(state=CLAIMED, runner_key_id=runner_key_id, runner_name=runner_name,
                                claim_token=token, lease_until=lease_until, claimed_at=now,
                                attempts=RequestReplicaRow.attempts + 1)
                    ).rowcount
            except IntegrityError:  # this runner already holds another replica of the request
                continue
            if taken:
                _refresh_state(conn, request_id, now)
                return Claim(_get(conn, request_id), replica, token, lease_until)
    return None


def heartbeat(catalog: Catalog, request_id: int, replica: int, token: str, lease_seconds: float) -> datetime:
    """Extend the lease; LeaseLost when the token no longer holds the replica."""
    lease_until = datetime.now(UTC) + timedelta(seconds=lease_seconds)
    with catalog.engine.begin() as conn:
        done = conn.execute(
            update(RequestReplicaRow)
            .where(RequestReplicaRow.request_id == request_id, RequestReplicaRow.replica == replica,
                   RequestReplicaRow.claim_token == token, RequestReplicaRow.state == CLAIMED)
            .values(lease_until=lease_until)
        ).rowcount
    if not done:
        raise LeaseLost(f"request {request_id} replica {replica}: this claim no longer holds the lease")
    return lease_until


@dataclass(frozen=True)
class HeldClaim:
    """Who holds a replica being completed, and since when (what a completion is checked against)."""

    runner_key_id: str
    runner: str
    claimed_at: datetime


Verify = Callable[[MeasurementRequest, HeldClaim], None]


def finish(catalog: Catalog, request_id: int, replica: int, token: str, *, bundle_digest: str | None = None,
           failure: str | None = None, verify: Verify | None = None) -> MeasurementRequest:
    """Mark a claimed replica done (with the published bundle that fulfilled it: runs signed by the
    claiming runner, in a bundle that completed no other replica, and whatever ``verify`` checks) or
    failed (with the failure). LeaseLost if the claim expired and moved."""
    try:
        return _finish(catalog, request_id, replica, token, bundle_digest, failure, verify)
    finally:
        _wrote(catalog)


def _finish(catalog: Catalog, request_id: int, replica: int, token: str, bundle_digest: str | None,
            failure: str | None, verify: Verify | None) -> MeasurementRequest:
    now = datetime.now(UTC)
    with catalog.engine.begin() as conn:
        _serialise_completions(conn)
        row = conn.execute(select(RequestReplicaRow).where(
            RequestReplicaRow.request_id == request_id, RequestReplicaRow.replica == replica,
            RequestReplicaRow.claim_token == token, RequestReplicaRow.state == CLAIMED)).first()
        if row is None:
            raise LeaseLost(f"request {request_id} replica {replica}: this claim no longer holds the lease")
        if bundle_digest is not None:
            _check_bundle(conn, row, bundle_digest)
            if verify is not None:
                verify(_get(conn, request_id), HeldClaim(row.runner_key_id, row.runner_name,
                                                         as_utc(row.claimed_at) or now))
        conn.execute(update(RequestReplicaRow).where(RequestReplicaRow.request_id == request_id,
                                                     RequestReplicaRow.replica == replica)
                     .values(state=DONE if bundle_digest else FAILED, finished_at=now, lease_until=None,
                             bundle_digest=bundle_digest, failure=None if bundle_digest else (failure or "failed")))
        _refresh_state(conn, request_id, now)
        return _get(conn, request_id)


# Any 64-bit constant: the PostgreSQL advisory lock every completion takes (pg_advisory_xact_lock).
_COMPLETION_LOCK = 0x6B69_636F_6D70  # "kicomp"


def _serialise_completions(conn: Connection) -> None:
    """Completions run one at a time: "this bundle completed no other replica" is read, then written, and
    two completions with one bundle must not both read "none" (issue 51: both were done, on both backends).
    PostgreSQL: a transaction-scoped advisory lock; SQLite: the write lock, taken before the first read."""
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    else:
        conn.execute(select(func.pg_advisory_xact_lock(_COMPLETION_LOCK)))


def _check_bundle(conn: Connection, row: Any, bundle_digest: str) -> None:
    if not conn.execute(select(func.count()).select_from(AttestationRow).where(
            AttestationRow.bundle_digest == bundle_digest, AttestationRow.key_id == row.runner_key_id)).scalar():
        raise ValueError(f"bundle {bundle_digest} is not published with runs signed by {row.runner_name}; "
                         "upload it (POST /api/v1/bundles) before marking the replica done")
    used = conn.execute(select(RequestReplicaRow.request_id, RequestReplicaRow.replica)
                        .where(RequestReplicaRow.bundle_digest == bundle_digest).limit(1)).first()
    if used is not None:
        raise ValueError(f"bundle {bundle_digest} already completed request {used.request_id} replica "
                         f"{used.replica}; a completion carries runs measured for it")


def _refresh_state(conn: Connection, request_id: int, now: datetime) -> None:
    states = conn.execute(select(RequestReplicaRow.state).where(RequestReplicaRow.request_id == request_id)).scalars()
    state = _state_of(set(states))
    finished = state in (DONE, FAILED)
    values: dict[str, Any] = {"state": state, "updated_at": now}
    if finished:
        values["open_key"] = None
    conn.execute(update(MeasurementRequestRow).where(MeasurementRequestRow.id == request_id).values(**values))


def completions(catalog: Catalog) -> list[tuple[MeasurementRequest, Replica]]:
    """Every finished replica, for the changes feed."""
    done = [(r, rep) for r in list_requests(catalog, limit=100_000) for rep in r.replicas if rep.finished_at]
    return sorted(done, key=lambda pair: (pair[1].finished_at or datetime.min.replace(tzinfo=UTC), pair[0].id))


def measured_workload(catalog: Catalog, operation: str, axes: dict[str, int], dtypes: dict[str, str]
                      ) -> dict[str, Any] | None:
    """The WorkloadCase (JSON) of ``operation`` (a digest) with these bindings that runs were measured on,
    if the catalog holds one: a request for it is measured on that exact case (same strides)."""
    with catalog.engine.connect() as conn:
        measured = select(RunRow.workload).where(RunRow.operation == operation).distinct()
        bodies = conn.execute(
            select(ObjectRow.body).where(ObjectRow.kind == "WorkloadCase", ObjectRow.operation == operation,
                                         ObjectRow.digest.in_(measured)).order_by(ObjectRow.digest)
        ).scalars().all()
    for body in map(json.loads, bodies):
        if body["spec"]["axes"] == axes and body["spec"].get("dtypes", {}) == dtypes:
            return dict(body)
    return None
