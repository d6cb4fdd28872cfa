"""Shared pieces of the site-wide read models (home, records, GPUs, challenges, implementations,
compare): every cohort of every operation, with its leader and record history, computed from the
lead's loading/cohort functions and the policy modules — never a second ranking path."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from kernelindex import urls
from kernelindex.domain.canonical import short_digest
from kernelindex.policy.evidence import SENTENCES
from kernelindex.policy.ratios import ratio
from kernelindex.policy.records import RecordEvent
from kernelindex.policy.staleness import is_stale
from kernelindex.policy.statistics import statistic_word
from kernelindex.readmodel import labels
from kernelindex.readmodel.cohorts import Cohort, cohort_record_events, cohorts_of
from kernelindex.readmodel.errors import BadParameter, NotFound
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.loading import OperationData, Run

__all__ = ["NotFound", "RunRef", "CohortSummary", "EventView", "cohort_summaries", "run_ref"]




@dataclass
class RunRef(JsonModel):
    """One run as the site-wide pages show it."""

    run_id: str
    implementation: str
    implementation_slug: str
    project: str
    language: str
    baseline: bool
    median_ns: int | None
    evidence: str
    evidence_sentence: str
    usable: bool
    observed_at: datetime
    stale: bool
    source: str = ""
    statistic: str = "median"  # what median_ns holds, from the run's protocol (policy.statistics): "mean" …
    time_ns: int | None = None  # the figure, statistic-neutral; median_ns is its deprecated alias

    def __post_init__(self) -> None:
        if self.time_ns is None:
            self.time_ns = self.median_ns


def run_ref(data: OperationData, run: Run, now: datetime, figure: int | None = None) -> RunRef:
    """A run as a list names it; ``figure``: its row's figure in its cohort when it stands for replicates."""
    impl = data.implementations[run.implementation]
    project = data.projects.get(impl.spec.project)
    usable = data.usability.get(run.implementation)
    return RunRef(
        run_id=run.run_id,
        implementation=labels.implementation_title(impl),
        implementation_slug=labels.implementation_slug(impl),
        project=labels.project_title(project) if project else "",
        language=impl.spec.callable.language,
        baseline=impl.spec.role == "baseline",
        median_ns=figure if figure is not None else run.median_ns,
        evidence=run.evidence,
        evidence_sentence=SENTENCES.get(run.evidence, ""),
        usable=bool(usable and usable.usable),
        observed_at=run.observed_at,
        stale=is_stale(run.observed_at, now),
        source=run.source,
        statistic=statistic_word(data.protocols[run.protocol].spec.statistic, run.spec.timing.method),
    )


@dataclass
class EventView(JsonModel):
    at: datetime
    kind: str  # first | beaten | retraction
    holder: RunRef | None
    previous: RunRef | None
    median_ns: int | None
    margin: float | None  # previous median / new median


@dataclass
class CohortSummary(JsonModel):
    operation: str
    operation_title: str
    key: str  # short cohort key, as used in ?cohort=
    cohort_key: str
    workload: str  # short workload key, as used in ?workload=
    workload_label: str
    label: str  # GPU · timed region · harness
    gpu: str | None  # registry slug
    gpu_name: str
    mode: str
    native: bool
    eligible_runs: int
    leader: RunRef | None
    second: RunRef | None
    margin_vs_second: float | None
    events: list[EventView] = field(default_factory=list)
    last_observed: datetime | None = None
    url: str = ""

    @property
    def last_event(self) -> EventView | None:
        return self.events[-1] if self.events else None


def _events(data: OperationData, cohort: Cohort, now: datetime) -> list[EventView]:
    by_digest = {r.digest: r for r in cohort.runs}

    def ref(digest: str | None) -> RunRef | None:
        return run_ref(data, by_digest[digest], now) if digest in by_digest else None

    return [_event_view(e, ref) for e in cohort_record_events(cohort)]


def _event_view(event: RecordEvent, ref) -> EventView:  # noqa: ANN001 - local callable
    return EventView(event.at, event.kind, ref(event.holder), ref(event.previous), event.median_ns, event.margin)


def cohort_summaries(data: OperationData, now: datetime) -> list[CohortSummary]:
    """Every cohort of one loaded operation, summarised. Home, records, GPU and challenge pages all
    need them, so they are cached per version of the operation and day (staleness moves by days)."""

    def compute() -> list[CohortSummary]:
        summaries = [_summary(data, cohort, now) for cohort in cohorts_of(data).values()]
        return sorted(summaries, key=lambda c: (c.operation, labels.natural_key(c.workload_label), c.label))

    return data.derived(("cohort-summaries", now.date().isoformat()), compute)


def _summary(data: OperationData, cohort: Cohort, now: datetime) -> CohortSummary:
    env = data.environments[cohort.environment]
    protocol = data.protocols[cohort.protocol]
    workload = data.workloads[cohort.workload]
    gpu = data.gpu_of(cohort.environment)
    ranked = cohort.ranked
    leader = cohort.run(ranked[0].item.id) if ranked else None
    # The runner-up is the best run of a *different* implementation: a revision's second run
    # (Liger's seq and hidden sweeps both measured one point) is not a rival.
    second = next((run for run in (cohort.run(e.item.id) for e in ranked[1:])
                   if leader and run.implementation != leader.implementation), None)
    margin = ratio(cohort.figure(second.digest), cohort.figure(leader.digest)) if leader and second else None
    eligible = cohort.eligible
    key, wkey = short_digest(cohort.key), short_digest(cohort.workload)
    return CohortSummary(
        operation=data.slug,
        operation_title=data.title,
        key=key,
        cohort_key=cohort.key,
        workload=wkey,
        workload_label=labels.workload_label(data.operation, workload),
        label=labels.cohort_label(env, protocol),
        gpu=gpu.slug if gpu else None,
        gpu_name=labels.gpu_label(env),
        mode=protocol.spec.timed_region,
        native=cohort.native,
        eligible_runs=len(eligible),
        leader=run_ref(data, leader, now, cohort.figure(leader.digest)) if leader else None,
        second=run_ref(data, second, now, cohort.figure(second.digest)) if second else None,
        margin_vs_second=margin,
        events=_events(data, cohort, now),
        last_observed=max((r.observed_at for r in eligible), default=None),
        url=urls.cohort(data.slug, wkey, key),
    )


def check_choice(parameter: str, value: str | None, allowed: list[str]) -> str | None:
    if value is None or value in allowed:
        return value
    from difflib import get_close_matches

    close = get_close_matches(value, allowed, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    shown = ", ".join(allowed[:12]) + (" …" if len(allowed) > 12 else "")
    raise BadParameter(parameter, f"{value!r} is not one of {shown}{hint}")
