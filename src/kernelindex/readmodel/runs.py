"""The evidence dossier of one run: a projection of what its operation's model says of it
(``OperationModel.run_facts``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select

from kernelindex import registry, urls
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.lifecycle import UnknownRunError, resolve_run_digest
from kernelindex.catalog.models import RunRow
from kernelindex.domain.canonical import short_digest
from kernelindex.domain.manifests import stored_form, stored_json
from kernelindex.readmodel.cohorts import Cohort
from kernelindex.readmodel.court import reproduces_json, reproduction_json
from kernelindex.readmodel.derive import sample_count
from kernelindex.readmodel.errors import NotFound
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.labels import cohort_key_short, cohort_label, gpu_label, workload_key, workload_label
from kernelindex.readmodel.loading import OperationData, Run, load_operation, operation_slug_of
from kernelindex.readmodel.operation_model import operation_model
from kernelindex.readmodel.operation_views import ImplementationRef
from kernelindex.readmodel.ranking_notes import host_bound_label
from kernelindex.readmodel.region_work import forward_work_note
from kernelindex.readmodel.reproduce import reproduce_json
from kernelindex.readmodel.rows import run_implementation
from kernelindex.readmodel.run_facts import RunFacts
from kernelindex.readmodel.samples import histogram, load_samples, run_secondary
from kernelindex.readmodel.source_notices import SourceNotice, source_notice
from kernelindex.readmodel.stream_panel import stream_panel


@dataclass
class RunDossier(JsonModel):
    run_id: str
    digest: str
    status: str
    operation: str
    operation_title: str
    implementation: ImplementationRef
    timing: dict
    memory: dict | None  # a peak-memory run's figure (MiB); None for latency runs
    rank: int | None
    rank_label: str | None
    cohort_size: int
    vs_first: float | None
    not_ranked_reasons: list[dict]
    evidence: str
    evidence_sentence: str
    replication: dict | None
    workload: dict
    protocol: dict
    environment: dict
    gpu: str
    cohort: str
    cohort_label: str
    correctness: dict
    source: dict
    source_notice: SourceNotice
    runner: dict | None
    observed_at: datetime
    stale: bool
    floor_ns: float | None  # the physical floor (datasheet)
    floor_ratio: float | None
    attainable_floor_ns: float | None  # the attainable floor (the best bandwidth seen sustained on the GPU)
    attainable_floor_ratio: float | None
    # The floors' latency term in words: the GPU's measured minimum kernel time, or why there is none.
    floor_latency: str | None
    retraction: dict | None
    superseded_by: str | None
    supersedes: list[str]
    artifacts: dict
    manifest: dict
    operation_url: str
    samples_url: str | None = None
    score: dict | None = None  # a suite-scoped leaderboard score (seconds); None for latency runs
    histogram: list[dict] = field(default_factory=list)
    secondary: list[dict] = field(default_factory=list)
    samples_minimum: int | None = None  # the protocol's minimum samples (repetitions.count), when it sets one
    capture_failure: str | None = None  # why CUDA-graph capture failed, in words (the raw text stays in timing.raw)
    region_note: str | None = None  # "this forward also computes the gradient; compare forward+backward"
    host_bound: str | None = None  # the host-bound label: wall time and syncs per call beside the device time
    cross_check_failure: str | None = None  # runner v3: why the cross-check fell back to per-call events, in words
    protocol_note: str | None = None  # what the protocol's own (signed, unedited) text does not say (registry)
    stream: dict | None = None  # runner v4: stream time, kernel busy time and the ceiling check, which ranks and why
    reproduction: dict | None = None  # a reported run heard against our verified twins (readmodel.court)
    reproduces: list[dict] = field(default_factory=list)  # a verified run: the reported figures it re-measured
    # A runner's run: the ki verify command that re-measures it, its pins and code (readmodel/reproduce.py).
    reproduce: dict | None = None


def _operation_slug(catalog: Catalog, digest: str) -> str:
    with catalog.engine.connect() as conn:
        op = conn.execute(select(RunRow.operation).where(RunRow.digest == digest)).scalar_one()
        return operation_slug_of(conn, op)


def _run_id(catalog: Catalog, digest: str) -> str:
    with catalog.engine.connect() as conn:
        return conn.execute(select(RunRow.run_id).where(RunRow.digest == digest)).scalar_one()


def _workload_facts(data: OperationData, digest: str) -> dict:
    """The run's workload (or benchmark suite) as the dossier shows it."""
    suite = data.suites.get(digest)
    if suite is None:
        workload = data.workloads[digest]
        label = workload_label(data.operation, workload)
        return {"key": workload_key(digest), "digest": digest, "label": label, **stored_json(workload)["spec"]}
    title = suite.metadata.title
    return {"key": workload_key(digest), "digest": digest, "label": "benchmark suite" if title is None else title,
            **stored_json(suite)["spec"]}


def _operation_url(data: OperationData, run: Run, cohort: Cohort | None) -> str:
    """The run's cohort on its operation page; the operation page itself when the cohort has no eligible
    run to show (every run of it under-sampled, failed or retracted), which the page would refuse."""
    if cohort is not None and not cohort.eligible:
        return urls.operation(data.slug)
    return urls.cohort(data.slug, workload_key(run.workload), cohort_key_short(run.cohort_key))


def _measurement_notes(run: Run, data: OperationData) -> dict[str, Any]:
    """What the dossier says in words beside the figures that the rules do not decide: the sample minimum,
    the region's work and a host-bound call."""
    return {"samples_minimum": sample_count(run, data).minimum, "region_note": forward_work_note(data, run, how=True),
            "host_bound": host_bound_label(run)}


def _ruled(facts: RunFacts) -> dict[str, Any]:
    """What the rules say of the run (its model's ``run_facts``), by the dossier's field names."""
    return {name: getattr(facts, name) for name in RunFacts.__dataclass_fields__}


def run_dossier(catalog: Catalog, run_ref: str, *, now: datetime) -> RunDossier:
    try:
        digest = resolve_run_digest(catalog, run_ref)
    except UnknownRunError as exc:
        raise NotFound(str(exc)) from None
    data = load_operation(catalog, _operation_slug(catalog, digest))
    if digest in data.unreadable:
        raise NotFound(f"run {run_ref} is stored but cannot be read: {data.unreadable[digest]}; it is not shown, "
                       "ranked or counted until an operator repairs or retracts it")
    run = next(r for r in [*data.runs, *data.memory_runs, *data.score_runs] if r.digest == digest)
    model = operation_model(data, now)
    cohort = model.cohorts.get(run.cohort_key)
    entry = next((e for e in cohort.ranked if e.item.id == digest), None) if cohort else None
    samples = load_samples(run.spec.timing.samples_digest)
    stored = stored_form(run.spec)  # the spec's parts exactly as the catalog stores them
    return RunDossier(
        run_id=run.run_id,
        digest=digest,
        status=run.status,
        operation=data.slug,
        operation_title=data.title,
        implementation=run_implementation(data, run),
        timing=stored["timing"],
        memory=stored.get("memory"),
        score=stored.get("score"),
        rank=entry.rank if entry else None,
        rank_label=entry.label if entry else None,
        cohort_size=len(cohort.ranked) if cohort else 0,
        vs_first=entry.vs_first if entry else None,
        evidence=run.evidence,
        replication=run.replication.to_json() if run.replication else None,
        workload=_workload_facts(data, run.workload),
        protocol={"digest": run.protocol, **stored_json(data.protocols[run.protocol])},
        environment={"digest": run.environment, **stored_json(data.environments[run.environment])},
        gpu=gpu_label(data.environments[run.environment]),
        cohort=cohort_key_short(run.cohort_key),
        cohort_label=cohort_label(data.environments[run.environment], data.protocols[run.protocol]),
        correctness=stored["correctness"],
        source=stored["source"],
        source_notice=source_notice(run.source, data.sources.get(run.source), external_id=run.spec.source.external_id),
        runner=stored.get("runner"),
        observed_at=run.observed_at,
        retraction=dict(run.retracted) if run.retracted is not None else None,
        superseded_by=_run_id(catalog, run.superseded_by["new"]) if run.superseded_by else None,
        supersedes=[_run_id(catalog, d) for d in run.supersedes],
        artifacts=stored.get("artifacts", {}),
        manifest={"apiVersion": "kernelindex/v1", "kind": "BenchmarkRun", "metadata": {}, "spec": stored},
        operation_url=_operation_url(data, run, cohort),
        samples_url=urls.run_samples(run.run_id) if samples else None,
        histogram=histogram(samples.get("stream_ns") or samples.get("device_ns", [])) if samples else [],
        secondary=run_secondary(stored["timing"], _checked_before_timing(run, data)),
        protocol_note=registry.protocol_notes().get(run.protocol),
        stream=stream_panel(run),
        reproduction=reproduction_json(data, run), reproduces=reproduces_json(data, run),
        reproduce=reproduce_json(data, run),
        **_measurement_notes(run, data),
        **_ruled(model.run_facts(run)),
    )


def _checked_before_timing(run: Run, data: OperationData) -> bool:
    """A runner's run of an operation (not of a problem module): its process compiled the case in the
    correctness checks before the timed region's first call."""
    protocol = data.protocols[run.protocol]
    return run.spec.runner is not None and "problem-module" not in (protocol.metadata.name or "")


def run_samples(catalog: Catalog, run_ref: str) -> dict:
    """The raw samples of one run, as stored in its signed bundle (the JSON of /runs/{id}/samples.json)."""
    try:
        digest = resolve_run_digest(catalog, run_ref)
    except UnknownRunError as exc:
        raise NotFound(str(exc)) from None
    with catalog.engine.connect() as conn:
        row = conn.execute(select(RunRow.run_id, RunRow.body).where(RunRow.digest == digest)).one()
    body = json.loads(row.body)
    spec = body.get("spec", body)
    samples_digest = spec["timing"].get("samples_digest")
    samples = load_samples(samples_digest)
    if samples is None:
        why = ("the source recorded no raw samples for it" if not samples_digest
               else f"its samples ({samples_digest[:19]}…) are not stored in this catalog")
        raise NotFound(f"run {row.run_id} has no downloadable raw samples: {why}")
    return {"run_id": row.run_id, "samples_digest": samples_digest, **samples}


__all__ = ["RunDossier", "run_dossier", "short_digest"]
