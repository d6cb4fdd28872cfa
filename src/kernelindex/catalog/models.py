"""Tables. Every object is stored whole as its canonical manifest (``body``); the hot fields of
runs are typed columns. Rows are only ever inserted: corrections are facts in their own tables."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, DateTime, Index, Integer, String, Text
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


class RetractionRow(Base):
    __tablename__ = "retractions"
    digest: Mapped[str] = mapped_column(DIGEST, primary_key=True)
    run: Mapped[str] = mapped_column(DIGEST, index=True)
    reason: Mapped[str] = mapped_column(Text)
    actor: Mapped[str] = mapped_column(String(200))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class SupersessionRow(Base):
    __tablename__ = "supersessions"
    digest: Mapped[str] = mapped_column(DIGEST, primary_key=True)
    new: Mapped[str] = mapped_column(DIGEST, index=True)
    old: Mapped[str] = mapped_column(DIGEST, index=True)
    reason: Mapped[str] = mapped_column(Text)
    actor: Mapped[str] = mapped_column(String(200))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


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


Index("ix_runs_operation_cohort", RunRow.operation, RunRow.cohort_key)
