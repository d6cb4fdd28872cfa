"""Tables. Every object is stored whole as its canonical manifest (``body``); the hot fields of
runs are typed columns. Rows are only ever inserted: corrections are facts in their own tables."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, DateTime, Float, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

DIGEST = String(71)


class Base(DeclarativeBase):
    pass


class ObjectRow(Base):
    """Every manifest that is not a run: operations, workloads, projects, implementations, ..."""

    __tablename__ = "objects"
    digest: Mapped[str] = mapped_column(DIGEST, primary_key=True)
    kind: Mapped[str] = mapped_column(String(40), index=True)
    name: Mapped[str | None] = mapped_column(String(200), index=True)
    operation: Mapped[str | None] = mapped_column(DIGEST, index=True)
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class RunRow(Base):
    __tablename__ = "runs"
    digest: Mapped[str] = mapped_column(DIGEST, primary_key=True)
    run_id: Mapped[str] = mapped_column(String(16), unique=True)
    operation: Mapped[str] = mapped_column(DIGEST, index=True)
    implementation: Mapped[str] = mapped_column(DIGEST, index=True)
    workload: Mapped[str] = mapped_column(DIGEST, index=True)
    protocol: Mapped[str] = mapped_column(DIGEST)
    environment: Mapped[str] = mapped_column(DIGEST, index=True)
    cohort_key: Mapped[str] = mapped_column(DIGEST, index=True)
    status: Mapped[str] = mapped_column(String(40))
    median_ns: Mapped[int | None] = mapped_column(BigInteger)
    p20_ns: Mapped[int | None] = mapped_column(BigInteger)
    p80_ns: Mapped[int | None] = mapped_column(BigInteger)
    observed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    source: Mapped[str] = mapped_column(String(120), index=True)
    external_id: Mapped[str] = mapped_column(String(500))
    runner_key_id: Mapped[str | None] = mapped_column(DIGEST)
    body: Mapped[str] = mapped_column(Text)
    published_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class AttestationRow(Base):
    """Fact recorded at publish: this run arrived in a bundle whose signature and digests checked out."""

    __tablename__ = "attestations"
    run: Mapped[str] = mapped_column(DIGEST, primary_key=True)
    bundle_digest: Mapped[str] = mapped_column(DIGEST)
    key_id: Mapped[str] = mapped_column(DIGEST)
    signature: Mapped[str] = mapped_column(Text)
    checked_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class InstallReviewRow(Base):
    """The install recipe of an implementation line a runner's uploaded bundle proposed: ``held`` when it arrived,
    ``approved`` when a curator approved it (``ki approve``). A line's latest act decides (catalog/curation.py)."""

    __tablename__ = "install_reviews"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    line: Mapped[str] = mapped_column(String(200), index=True)
    operation: Mapped[str] = mapped_column(DIGEST)
    act: Mapped[str] = mapped_column(String(20))  # held | approved
    actor: Mapped[str] = mapped_column(String(200))
    reason: Mapped[str] = mapped_column(Text)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class AdministrativeAct:
    """What every administrative act on runs records (a retraction, a supersession): why, who, when."""

    reason: Mapped[str] = mapped_column(Text)
    actor: Mapped[str] = mapped_column(String(200))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class RetractionRow(AdministrativeAct, Base):
    __tablename__ = "retractions"
    digest: Mapped[str] = mapped_column(DIGEST, primary_key=True)
    run: Mapped[str] = mapped_column(DIGEST, index=True)


class SupersessionRow(AdministrativeAct, Base):
    __tablename__ = "supersessions"
    digest: Mapped[str] = mapped_column(DIGEST, primary_key=True)
    new: Mapped[str] = mapped_column(DIGEST, index=True)
    old: Mapped[str] = mapped_column(DIGEST, index=True)


class TrustedRunnerRow(Base):
    __tablename__ = "trusted_runners"
    key_id: Mapped[str] = mapped_column(DIGEST, primary_key=True)
    digest: Mapped[str] = mapped_column(DIGEST, unique=True)
    name: Mapped[str] = mapped_column(String(200))
    public_key: Mapped[str] = mapped_column(String(64))
    trusted_by: Mapped[str] = mapped_column(String(200))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class PublicationRow(Base):
    """One publication transaction: what was published, from which snapshot, by whom."""

    __tablename__ = "publications"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    source: Mapped[str] = mapped_column(String(120))
    snapshot_digest: Mapped[str | None] = mapped_column(DIGEST)
    locator: Mapped[str | None] = mapped_column(Text)
    actor: Mapped[str] = mapped_column(String(200))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    counts: Mapped[str] = mapped_column(Text)


class CatalogStateRow(Base):
    """A single counter bumped by every write, so readers can cache per catalog version."""

    __tablename__ = "catalog_state"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version: Mapped[int] = mapped_column(BigInteger)


class CatalogChangeRow(Base):
    """One operation a catalog version changed (``operation`` NULL: every operation). Written by the
    publication that bumps the version; readers reload only what changed (``readmodel/versions.py``)."""

    __tablename__ = "catalog_changes"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    version: Mapped[int] = mapped_column(BigInteger, index=True)
    operation: Mapped[str | None] = mapped_column(DIGEST)


class SourceTallyRow(Base):
    """Per source name, what the home page's sources block shows, kept by the publication transaction that adds
    runs or a publication (``catalog/source_tallies.py``) instead of counted over every run on each read. A name
    is a run's source, a publication's source, or both."""

    __tablename__ = "source_tallies"
    source: Mapped[str] = mapped_column(String(120), primary_key=True)
    runs: Mapped[int] = mapped_column(Integer)
    reported_runs: Mapped[int] = mapped_column(Integer)  # of them, runs no runner key signed (a source's report)
    last_observed: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_published: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))  # its newest publication



class SharedAnswerRow(Base):
    """A site-wide answer of ``ki serve`` at one catalog version, computed by the worker that claimed it and read
    by the others (``catalog/shared_answers.py``): a row without a body is a claim in progress."""

    __tablename__ = "shared_answers"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)  # digest of the answer's cache key
    stamp: Mapped[str] = mapped_column(String(64), primary_key=True)  # digest of what it was computed at
    version: Mapped[int] = mapped_column(Integer, index=True)  # the catalog version: older rows are dropped
    claimed_at: Mapped[float] = mapped_column(Float)  # Unix time the computation was claimed
    headers: Mapped[str | None] = mapped_column(Text)  # status, ETag and headers (JSON); None while claimed
    body: Mapped[bytes | None] = mapped_column(LargeBinary)

class LookupAnswerRow(Base):
    """A finished answer of ``ki search`` or ``ki show operation`` (its JSON, or its refusal) over this catalog,
    kept by the command's arguments, the code's form and the catalog version, with the observed instants between
    which the reader's clock leaves every run's staleness as it was (``catalog/lookup_answers.py``). Derived, not
    catalog data: writing it never bumps the catalog version, and rows of older versions are dropped."""

    __tablename__ = "lookup_answers"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)  # digest of the command and its arguments
    form: Mapped[str] = mapped_column(String(64), primary_key=True)  # fingerprint of the code that computed it
    version: Mapped[int] = mapped_column(Integer, index=True)  # the catalog version it was computed at
    stale_below: Mapped[str | None] = mapped_column(String(32))  # the newest run stale then was observed at this
    fresh_from: Mapped[str | None] = mapped_column(String(32))  # the oldest run fresh then was observed at this
    body: Mapped[str] = mapped_column(Text)  # {"answer": …} or {"error": message, "code": exit code}


Index("ix_runs_operation_cohort", RunRow.operation, RunRow.cohort_key)
Index("ix_runs_external_id", RunRow.external_id)  # a bundle's run may not reuse a stored run's external id
Index("ix_runs_observed_at", RunRow.observed_at)  # the runs nearest a staleness threshold (lookup_answers.py)


class OperationSummaryRow(Base):
    """What the site-wide pages read of one operation (its counts, cohorts and their leaders), computed by
    the read model from the operation's runs (``readmodel/summaries.py``) and kept per version of the
    operation's data and per ``form`` (a fingerprint of the code that computed it). Derived, not catalog
    data: rows are replaced when the operation moves, and writing them never bumps the catalog version."""

    __tablename__ = "operation_summaries"
    operation: Mapped[str] = mapped_column(String(200), primary_key=True)  # the operation's slug
    version: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    form: Mapped[str] = mapped_column(String(64), primary_key=True)
    body: Mapped[str] = mapped_column(Text)  # its counts, per-GPU figures and newest records (JSON)
    cohorts: Mapped[str] = mapped_column(Text)  # every cohort's summary (JSON), read when a page lists them
    # its measured workload cases (JSON), read by the workloads listing only
    workloads: Mapped[str] = mapped_column(Text, server_default="[]")
    # the counts the search chooser weighs (JSON: ``summaries.OperationCounts``), read without the body
    counts: Mapped[str] = mapped_column(Text, server_default="{}")


# --- the write path (round 2): API keys, the audit log, measurement requests ---------------------
# None of these is catalog data: writing them never bumps CatalogStateRow.version.


class ApiKeyRow(Base):
    """An API key: only a salted hash of its secret is stored; revocation sets ``revoked_at``."""

    __tablename__ = "api_keys"
    key_id: Mapped[str] = mapped_column(String(24), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    scope: Mapped[str] = mapped_column(String(40))
    salt: Mapped[str] = mapped_column(String(64))
    secret_hash: Mapped[str] = mapped_column(String(64))
    created_by: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_by: Mapped[str | None] = mapped_column(String(200))


class AuditRow(Base):
    """One write, appended and never changed: who, with which scope, did what to which object."""

    __tablename__ = "audit_log"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    actor: Mapped[str] = mapped_column(String(200))
    api_key: Mapped[str | None] = mapped_column(String(24))
    scope: Mapped[str | None] = mapped_column(String(40))
    action: Mapped[str] = mapped_column(String(60))
    object_digest: Mapped[str | None] = mapped_column(String(120))
    client: Mapped[str | None] = mapped_column(String(100))
    outcome: Mapped[str] = mapped_column(String(40))
    detail: Mapped[str | None] = mapped_column(Text)


class MeasurementRequestRow(Base):
    """A request to measure one workload on one GPU product. ``open_key`` is the request digest while
    it is unfinished (unique: identical open requests merge) and NULL once every replica finished."""

    __tablename__ = "measurement_requests"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    digest: Mapped[str] = mapped_column(DIGEST, index=True)
    open_key: Mapped[str | None] = mapped_column(DIGEST, unique=True)
    operation: Mapped[str] = mapped_column(String(120), index=True)
    gpu: Mapped[str] = mapped_column(String(120), index=True)
    body: Mapped[str] = mapped_column(Text)
    replicas: Mapped[int] = mapped_column(Integer)
    askers: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(20), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class RequestReplicaRow(Base):
    """One replica of a request: open → claimed (leased by one runner key) → done | failed.
    A runner key holds at most one replica of a request (unique), so it never serves one twice."""

    __tablename__ = "request_replicas"
    request_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    replica: Mapped[int] = mapped_column(Integer, primary_key=True)
    state: Mapped[str] = mapped_column(String(20), index=True)
    runner_key_id: Mapped[str | None] = mapped_column(DIGEST)
    runner_name: Mapped[str | None] = mapped_column(String(200))
    claim_token: Mapped[str | None] = mapped_column(String(64))
    lease_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    claimed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    bundle_digest: Mapped[str | None] = mapped_column(DIGEST)
    failure: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer)


class ClaimNonceRow(Base):
    """The nonce of an accepted signed claim (trust/claims.py), kept for the claim window and a
    margin, so the same signed claim is accepted once."""

    __tablename__ = "claim_nonces"
    key_id: Mapped[str] = mapped_column(DIGEST, primary_key=True)
    nonce: Mapped[str] = mapped_column(String(64), primary_key=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)


Index("ux_request_replica_runner", RequestReplicaRow.request_id, RequestReplicaRow.runner_key_id, unique=True)
