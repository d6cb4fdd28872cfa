"""Load everything one operation's answers need, in a handful of indexed queries, cached per
catalog version (every write bumps it), and derive the policy facts once."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, cast

import orjson
from sqlalchemy import Connection, select

from kernelindex.catalog.collector import collector_paused
from kernelindex.catalog.curation import held_lines
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import (
    AttestationRow,
    ObjectRow,
    RetractionRow,
    RunRow,
    SupersessionRow,
)
from kernelindex.catalog.runners import trusted_keys
from kernelindex.domain.instants import as_utc
from kernelindex.domain.manifests import (
    BenchmarkProtocol,
    ExecutionEnvironment,
    ImplementationRevision,
    M,
    Manifest,
    OperationSpec,
    SoftwareProject,
    Source,
    WorkloadCase,
    WorkloadSuite,
)
from kernelindex.policy.cohorts import PEAK_MEMORY_METRIC, is_latency
from kernelindex.policy.eligibility import stored_latency_problems
from kernelindex.policy.floor import Attainable
from kernelindex.policy.usability import held_for_review, usability
from kernelindex.readmodel.attainable import attainable_bandwidths
from kernelindex.readmodel.cache import READ_CACHE
from kernelindex.readmodel.derive import derive_policy
from kernelindex.readmodel.errors import NotFound
from kernelindex.readmodel.operation_data import OperationData, RetractionFact, Run, SupersessionFact
from kernelindex.readmodel.stored_runs import UnreadableRun, stored_spec
from kernelindex.readmodel.versions import VERSIONS, Versions

log = logging.getLogger("kernelindex.readmodel")
ALL_KEY = ("operation-data-all",)
ATTACHED = "operation-with-attainable"  # the stored operation with its GPUs' attainable bandwidths
ONE_BY_ONE = 8  # more operations to load than this: one pass over every table instead


def load_operation(catalog: Catalog, slug: str) -> OperationData:
    """Everything one operation's answers need, loaded once per version of that operation (the last
    catalog version that changed it: ``readmodel.versions``), with its GPUs' attainable bandwidths."""
    versions = VERSIONS.current(catalog)
    return _with_attainable(catalog, versions, stored_operation(catalog, slug, versions.of(slug)))


def loaded_operation(catalog: Catalog, slug: str, versions: Versions | None = None) -> OperationData | None:
    """The operation as ``load_operation`` answers it at ``versions`` (default: now), if this worker holds
    it already; loads nothing."""
    versions = versions or VERSIONS.current(catalog)
    return READ_CACHE.peek(catalog, (ATTACHED, slug, versions.attainable), versions.of(slug), scope=slug)


def stored_operation(catalog: Catalog, slug: str, version: int) -> OperationData:
    """The operation as its rows say at ``version``, without attainable bandwidths (they depend on
    other operations' runs): the first cache level (docs/caching.md)."""
    return READ_CACHE.get(catalog, ("operation-data", slug), lambda: _load(catalog, slug, version), version=version,
                          scope=slug, long_lived=True)


def attainable_now(catalog: Catalog, gpus: frozenset[str] | None = None) -> dict[str, Attainable]:
    """Per GPU slug, the attainable bandwidth at the catalog's current version (``readmodel.attainable``):
    of these ``gpus`` only (None: of every GPU)."""
    versions = VERSIONS.current(catalog)
    return attainable_bandwidths(catalog, versions,
                                 lambda slug: attested_runs_of(catalog, slug, versions.of(slug)), gpus)


def attested_runs_of(catalog: Catalog, slug: str, version: int) -> OperationData:
    """What the attainable figures read of an operation: its runs whose bundle was attested (a verified
    run is one: ``policy.evidence``), each with the eligibility and evidence the whole operation gives it
    (both are facts of the run alone; replication only ranks verified against replicated). The whole
    operation when this worker holds it already; else only those runs are loaded — a one-shot ``ki show``
    then does not load every verified operation whole."""
    held = READ_CACHE.peek(catalog, ("operation-data", slug), version, scope=slug)
    if held is not None:
        return held
    return READ_CACHE.get(catalog, ("operation-data-attested", slug),
                          lambda: _load(catalog, slug, version, attested_only=True), version=version, scope=slug)


def _with_attainable(catalog: Catalog, versions: Versions, stored: OperationData) -> OperationData:
    """The stored operation with the attainable bandwidths of its GPUs attached: the same object while
    none of them moves, so a verified run elsewhere reloads nothing here unless it moved a figure of
    one of this operation's GPUs. The copy shares the stored object's runs and derived values."""
    def attach() -> OperationData:
        figures = attainable_now(catalog, stored.gpu_slugs)
        mine = {gpu: figures[gpu] for gpu in sorted(stored.gpu_slugs) if gpu in figures}
        if mine == stored.attainable:
            return stored
        return READ_CACHE.get(catalog, (ATTACHED, stored.slug, tuple(mine.items())),
                              lambda: replace(stored, attainable=mine, memo=stored.memo),
                              version=stored.version, scope=stored.slug)

    return READ_CACHE.get(catalog, (ATTACHED, stored.slug, versions.attainable), attach, version=stored.version,
                          scope=stored.slug)


def load_all_operations(catalog: Catalog) -> dict[str, OperationData]:
    """Every operation, by slug (sorted), kept per catalog version. Each is the object ``load_operation``
    answers for its slug: after a publication only the operations it changed are loaded again (one by
    one when they are few, else in one pass of a few whole-table queries)."""
    versions = VERSIONS.current(catalog)

    @collector_paused()  # a few hundred thousand objects kept alive: no cycles to find, only a heap to traverse
    def attached() -> dict[str, OperationData]:
        return {slug: _with_attainable(catalog, versions, data) for slug, data in _all_at(catalog, versions).items()}

    return READ_CACHE.get(catalog, ALL_KEY, attached, version=versions.catalog, long_lived=True)


def _all_at(catalog: Catalog, versions: Versions) -> dict[str, OperationData]:
    with catalog.engine.connect() as conn:
        names = conn.execute(select(ObjectRow.name).where(ObjectRow.kind == "OperationSpec")).scalars()
        slugs = sorted(name for name in names if name is not None)
    missing = [s for s in slugs if READ_CACHE.peek(catalog, ("operation-data", s), versions.of(s), scope=s) is None]
    if len(missing) > ONE_BY_ONE:
        return _load_all(catalog, versions)
    return {slug: stored_operation(catalog, slug, versions.of(slug)) for slug in slugs}


def operation_slug_of(conn: Connection, digest: str) -> str:
    """The slug of the stored operation with this digest."""
    name = conn.execute(select(ObjectRow.name).where(ObjectRow.digest == digest)).scalar_one_or_none()
    if name is None:
        raise NotFound(f"no named operation {digest} in the catalog")
    return name


def _bodies(conn, digests: set[str]) -> dict[str, dict]:  # noqa: ANN001
    found: dict[str, dict] = {}
    ordered = sorted(digests)
    for start in range(0, len(ordered), 500):
        rows = conn.execute(
            select(ObjectRow.digest, ObjectRow.body).where(ObjectRow.digest.in_(ordered[start : start + 500]))
        )
        found.update({d: orjson.loads(b) for d, b in rows})
    return found


@dataclass(frozen=True)
class _Facts:
    """The catalog-wide facts about runs: corrections, attestations, trusted keys, sources."""

    retractions: dict[str, RetractionFact]
    supersessions: dict[str, SupersessionFact]  # by the superseded (old) run
    superseding: dict[str, SupersessionFact]  # by the superseding (new) run
    attested: set[str]
    trusted: dict[str, str]
    sources: dict[str, Source]
    held: frozenset[str] = frozenset()  # implementation lines whose install line awaits a curator
    # Manifests validated in this load, by digest: an environment, protocol or project that many
    # operations name is validated and held once.
    typed: dict[str, Manifest] = field(default_factory=dict)

    def typed_as(self, model: type[M], bodies: dict[str, dict]) -> dict[str, M]:
        found: dict[str, M] = {}
        for digest, body in bodies.items():
            manifest = self.typed.get(digest)
            if not isinstance(manifest, model):
                manifest = self.typed[digest] = model.model_validate(body)
            found[digest] = manifest
        return found


@collector_paused()
def _load(catalog: Catalog, slug: str, version: int, *, attested_only: bool = False) -> OperationData:
    with catalog.engine.connect() as conn:
        op_row = conn.execute(
            select(ObjectRow.digest, ObjectRow.body).where(ObjectRow.kind == "OperationSpec", ObjectRow.name == slug)
        ).first()
        if op_row is None:
            raise NotFound(f"no operation {slug!r} in the catalog")
        digest = op_row.digest
        query = select(*_RUN_COLUMNS).where(RunRow.operation == digest)
        if attested_only:
            query = query.where(RunRow.digest.in_(select(AttestationRow.run)))
        rows = conn.execute(query.order_by(RunRow.digest)).all()
        run_digests = [r.digest for r in rows]
        facts = _facts_of_runs(conn, run_digests)
        bodies = _bodies(conn, _refs(rows))
        if not attested_only:  # the workloads no run measured too (the page lists them)
            workload_rows = conn.execute(
                select(ObjectRow.digest, ObjectRow.body).where(
                    ObjectRow.kind == "WorkloadCase", ObjectRow.operation == digest
                )
            )
            bodies.update({d: orjson.loads(b) for d, b in workload_rows})
        projects = dict(sorted(_bodies(conn, _project_refs(bodies)).items()))
    operation = OperationSpec.model_validate_json(op_row.body)
    return _assemble(version, slug, operation, digest, rows, bodies, projects, facts)


def _facts_of_runs(conn: Connection, run_digests: list[str] | None) -> _Facts:
    """Retractions, supersessions and attestations of these runs (None: of every run), trusted keys, sources."""
    return _Facts(
        # the rows' columns are those of the TypedDicts (catalog.models declares them)
        cast(dict[str, RetractionFact], _facts(conn, RetractionRow, RetractionRow.run, run_digests)),
        cast(dict[str, SupersessionFact], _facts(conn, SupersessionRow, SupersessionRow.old, run_digests)),
        cast(dict[str, SupersessionFact], _facts(conn, SupersessionRow, SupersessionRow.new, run_digests)),
        set(_facts(conn, AttestationRow, AttestationRow.run, run_digests)),
        trusted_keys(conn),
        _sources(conn),
        held_lines(conn),
    )


@collector_paused()
def _load_all(catalog: Catalog, versions: Versions) -> dict[str, OperationData]:
    with catalog.engine.connect() as conn:
        operations = conn.execute(
            select(ObjectRow.name, ObjectRow.digest, ObjectRow.body).where(ObjectRow.kind == "OperationSpec")
        ).all()
        rows = conn.execute(select(*_RUN_COLUMNS).order_by(RunRow.digest)).all()
        facts = _facts_of_runs(conn, None)
        objects = conn.execute(
            select(ObjectRow.digest, ObjectRow.kind, ObjectRow.operation, ObjectRow.body).where(ObjectRow.kind.in_(
                ("WorkloadCase", "WorkloadSuite", "ImplementationRevision", "BenchmarkProtocol",
                 "ExecutionEnvironment", "SoftwareProject"))
            )
        ).all()
    every = {o.digest: orjson.loads(o.body) for o in objects}
    runs_of: dict[str, list[Any]] = {}
    for row in rows:
        runs_of.setdefault(row.operation, []).append(row)
    workloads_of: dict[str, list[str]] = {}
    for o in objects:
        if o.kind == "WorkloadCase" and o.operation is not None:
            workloads_of.setdefault(o.operation, []).append(o.digest)
    loaded = {}
    for slug, digest, body in sorted(operations, key=lambda o: o.name):
        op_rows = runs_of.get(digest, [])
        bodies = {d: every[d] for d in _refs(op_rows) if d in every}
        bodies.update({d: every[d] for d in workloads_of.get(digest, [])})
        projects = {d: every[d] for d in sorted(_project_refs(bodies)) if d in every}
        assemble = partial(_assemble, versions.of(slug), slug, OperationSpec.model_validate_json(body), digest,
                           op_rows, bodies, projects, facts)
        loaded[slug] = READ_CACHE.get(catalog, ("operation-data", slug), assemble, version=versions.of(slug),
                                      scope=slug)
    return loaded


def _refs(rows: Sequence[Any]) -> set[str]:
    return {getattr(r, f) for r in rows for f in ("implementation", "workload", "protocol", "environment")}


def _project_refs(bodies: dict[str, dict]) -> set[str]:
    return {b["spec"]["project"] for b in bodies.values() if b["kind"] == "ImplementationRevision"}


def _sources(conn: Connection) -> dict[str, Source]:
    source_bodies = conn.execute(select(ObjectRow.body).where(ObjectRow.kind == "Source")).scalars()
    manifests = [Source.model_validate(orjson.loads(b)) for b in source_bodies]
    return {m.spec.name: m for m in manifests}


def _assemble(version: int, slug: str, operation: OperationSpec, digest: str, rows: Sequence[Any],
              bodies: dict[str, dict], projects: dict[str, dict], facts: _Facts) -> OperationData:
    loaded, unreadable = _readable_runs(rows, facts)
    runs = [r for r in loaded if is_latency(r.metric)]
    by_kind = _split(bodies)
    usable = {
        d: usability(b["spec"], projects.get(b["spec"]["project"], {}).get("spec", {}))
        for d, b in by_kind["ImplementationRevision"].items()
    }
    for d, b in by_kind["ImplementationRevision"].items():
        if (line := b.get("metadata", {}).get("name")) in facts.held:
            usable[d] = held_for_review(usable[d], line)
    data = OperationData(
        slug,
        operation,
        digest,
        runs,
        facts.typed_as(WorkloadCase, by_kind["WorkloadCase"]),
        facts.typed_as(ImplementationRevision, by_kind["ImplementationRevision"]),
        facts.typed_as(SoftwareProject, projects),
        facts.typed_as(BenchmarkProtocol, by_kind["BenchmarkProtocol"]),
        facts.typed_as(ExecutionEnvironment, by_kind["ExecutionEnvironment"]),
        usable,
        facts.trusted,
        version,
        facts.sources,
        [r for r in loaded if r.metric == PEAK_MEMORY_METRIC],
        [r for r in loaded if r.metric.startswith("score:")],
        facts.typed_as(WorkloadSuite, by_kind.get("WorkloadSuite", {})),
        unreadable,
    )
    derive_policy(data)
    return data


def _facts(conn, table, column, digests: list[str] | None) -> dict[str, dict]:  # noqa: ANN001
    """Rows of a fact table by ``column``: those naming ``digests``, or all of them (None)."""
    found: dict[str, dict] = {}
    chunks = [None] if digests is None else [digests[start : start + 500] for start in range(0, len(digests), 500)]
    for chunk in chunks:
        query = select(*table.__table__.columns)
        if chunk is not None:
            query = query.where(column.in_(chunk))
        for row in conn.execute(query.order_by(*table.__table__.primary_key.columns)).mappings():
            found.setdefault(row[column.key], dict(row))
    return found


def _split(bodies: dict[str, dict]) -> dict[str, dict[str, dict]]:
    split: dict[str, dict[str, dict]] = {
        k: {} for k in ("WorkloadCase", "ImplementationRevision", "BenchmarkProtocol", "ExecutionEnvironment")
    }
    for digest, body in sorted(bodies.items()):  # the same order however they were loaded
        split.setdefault(body["kind"], {})[digest] = body
    return split


_RUN_COLUMNS = (RunRow.digest, RunRow.run_id, RunRow.body, RunRow.cohort_key, RunRow.implementation, RunRow.workload,
                RunRow.protocol, RunRow.environment, RunRow.status, RunRow.median_ns, RunRow.p20_ns, RunRow.p80_ns,
                RunRow.observed_at, RunRow.source, RunRow.operation)


def _run(row: Any, facts: _Facts) -> Run:
    # positional: named access on ~11,000 rows costs more than the rest of building a Run
    (digest, run_id, body, cohort_key, implementation, workload, protocol, environment, status, median_ns, p20_ns,
     p80_ns, observed_at, source, _) = row
    superseding = facts.superseding.get(digest)
    spec, refused = stored_spec(body)
    timing = spec.timing
    invalid = refused + stored_latency_problems(median_ns, timing.median_ns if timing.median_ns is not None
                                                else timing.mean_ns)
    return Run(digest, run_id, spec, cohort_key, implementation, workload, protocol, environment, status, median_ns,
               p20_ns, p80_ns, as_utc(observed_at), source,
               retracted=facts.retractions.get(digest), superseded_by=facts.supersessions.get(digest),
               supersedes=[superseding["old"]] if superseding else [], attested=digest in facts.attested,
               invalid_stored=invalid)


def _readable_runs(rows: Sequence[Any], facts: _Facts) -> tuple[list[Run], dict[str, str]]:
    """The runs that can be read, and why each of the others cannot (by digest)."""
    loaded, unreadable = [], {}
    for row in rows:
        try:
            loaded.append(_run(row, facts))
        except UnreadableRun as exc:
            log.warning("run %s is left out of the read model: %s", row[1], exc)
            unreadable[row[0]] = str(exc)
    return loaded, unreadable
