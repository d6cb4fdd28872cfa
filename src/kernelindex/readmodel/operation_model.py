"""One operation's model (issue 48 item 1, docs/design.md §6): what every view of the operation shows — its
cohorts with their ranked rows, the floors of each workload's region on each GPU, the headline, the record
history, the coverage gaps and what to run — derived by the policy functions once per loaded operation and
clock, and kept. The operation page, its JSON and CSV twins, ``ki show operation``, ``ki use`` and the MCP tools
are projections of it: none of them enters a floor, ranking or selection rule itself
(``tests/test_architecture.py`` holds the page builders to it). Its summary (``summary``: counts, cohorts with
their leaders and records), serialized, is the stored summary the site-wide pages read (``readmodel/summaries.py``).

A model is immutable to its readers: what it derives on first use is kept inside it and never changes. It
is kept on the loaded operation it was built from (``operation_model``), one per clock, so the page, its "use
this" box and the sections beside it share one set of rows and floors."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from kernelindex import registry
from kernelindex.catalog.db import Catalog
from kernelindex.policy.ratios import ratio
from kernelindex.policy.records import RecordEvent
from kernelindex.policy.selection import MODE_ORDER
from kernelindex.readmodel.cohorts import Cohort, cohort_record_events, cohorts_of
from kernelindex.readmodel.errors import NotFound
from kernelindex.readmodel.floors import Floors, cohort_floors, run_floors
from kernelindex.readmodel.gaps import NotMeasured, asked_gpu, not_measured, on_gpu
from kernelindex.readmodel.headline import fastest_by_language, floor_view, headline_slots
from kernelindex.readmodel.labels import cohort_key_short, gpu_label, implementation_slug, workload_key
from kernelindex.readmodel.leaderboard import Leaderboard, leaderboards
from kernelindex.readmodel.loading import OperationData, Run, load_operation
from kernelindex.readmodel.memory import MemoryPanel, memory_panel
from kernelindex.readmodel.operation_select import other_gpus, select
from kernelindex.readmodel.operation_summary import OperationFacts, summary_of
from kernelindex.readmodel.operation_views import (
    FloorView,
    HeadlineSlot,
    ImplementationSummary,
    LanguageLeader,
    OtherGpu,
    RankedRow,
    RankingNote,
)
from kernelindex.readmodel.pages_common import CohortSummary, cohort_summaries
from kernelindex.readmodel.ranking_notes import ranking_notes
from kernelindex.readmodel.recommend import Recommendation, build_recommendation
from kernelindex.readmodel.rows import implementation_ref, ranked_only, ranked_rows
from kernelindex.readmodel.run_facts import RunFacts, run_facts
from kernelindex.readmodel.scaling import ScalingChart, scaling_chart
from kernelindex.readmodel.shapes import ShapeTable, shape_table
from kernelindex.registry import GpuSpec

T = TypeVar("T")


@dataclass(frozen=True)
class Selection:
    """What a view of the operation shows: the workload, its cohorts with eligible runs, the cohort, and —
    when the URL asked for a GPU without runs of the workload — that GPU's gap (its floor and nearest GPU)."""

    workload: str | None
    cohorts: list[Cohort]
    cohort: Cohort | None
    asked_gap: NotMeasured | None = None


@dataclass(frozen=True, eq=False)
class OperationModel:
    data: OperationData
    now: datetime  # the clock staleness is judged by
    _kept: dict[Hashable, Any] = field(default_factory=dict, repr=False)

    def _once(self, key: Hashable, compute: Callable[[], T]) -> T:
        if key not in self._kept:
            self._kept.setdefault(key, compute())
        return self._kept[key]

    @property
    def cohorts(self) -> Mapping[str, Cohort]:
        """Every cohort of the operation by key, ranked (``policy.ranking``)."""
        return cohorts_of(self.data)

    @property
    def eligible_by_workload(self) -> Mapping[str, int]:
        def count() -> dict[str, int]:
            found: dict[str, int] = defaultdict(int)
            for run in self.data.runs:
                if run.eligible:
                    found[run.workload] += 1
            return found
        return self._once("eligible-by-workload", count)

    @property
    def eligible_runs(self) -> int:
        return sum(self.eligible_by_workload.values())

    def cohort(self, key: str) -> Cohort | None:
        """The cohort named by its key or its short key (``?cohort=``)."""
        return next((c for c in self.cohorts.values() if key in (c.key, cohort_key_short(c.key))), None)

    def select(self, workload: str | None, cohort: str | None, gpu: str | None) -> Selection:
        """The URL's ``?workload=``, ``?cohort=`` and ``?gpu=`` (any alias), else the defaults of
        ``policy.selection``; a GPU without runs of the workload shows its nearest measured GPU's cohort."""
        return self._once(("select", workload, cohort, gpu), lambda: self._select(workload, cohort, gpu))

    def _select(self, workload: str | None, cohort: str | None, gpu: str | None) -> Selection:
        asked = asked_gpu(gpu)
        chosen_workload, workload_cohorts, chosen = select(
            self.data, dict(self.cohorts), dict(self.eligible_by_workload), workload, cohort, asked)
        gap = self.gaps(chosen, [asked.slug])[0] \
            if asked and chosen and not on_gpu(self.data, workload_cohorts, asked.slug) else None
        if gap and gap.nearest and not cohort:  # show the nearest measured GPU's cohort below
            chosen = next((c for c in workload_cohorts if cohort_key_short(c.key) == gap.nearest.cohort), chosen)
        return Selection(chosen_workload, workload_cohorts, chosen, gap)

    def ordered(self, cohorts: list[Cohort]) -> list[Cohort]:
        """Cohorts as a page lists them: by timed region (forward first), then GPU, then key."""
        data = self.data
        return sorted(cohorts, key=lambda c: (MODE_ORDER.get(data.protocols[c.protocol].spec.timed_region, 9),
                                              gpu_label(data.environments[c.environment]), c.key))

    def rows(self, cohort: Cohort) -> list[RankedRow]:
        """The cohort's ranked rows (and those shown aside), with their floor ratios; a new list each call."""
        return list(self._once(("rows", cohort.key), lambda: ranked_rows(self.data, cohort, self.now)))

    def ranked(self, cohort: Cohort) -> list[RankedRow]:
        """The rows that hold a rank."""
        return ranked_only(self.rows(cohort))

    def floors(self, cohort: Cohort) -> Floors | None:
        """(physical, attainable) floors of the cohort's workload and region on its GPU."""
        return cohort_floors(self.data, cohort)

    def run_floors(self, run: Run) -> Floors | None:
        return run_floors(self.data, run)

    def run_facts(self, run: Run) -> RunFacts:
        """What the rules say of one run (latency, peak-memory or score): why it holds no rank, its evidence
        sentence, staleness, floors and its ratio to each."""
        return self._once(("run-facts", run.digest),
                          lambda: run_facts(self.data, run, self.cohorts.get(run.cohort_key), self.now))

    def floor_view(self, cohort: Cohort) -> FloorView | None:
        return self._once(("floor-view", cohort.key), lambda: floor_view(self.data, cohort, self.rows(cohort)))

    def headline(self, cohort: Cohort) -> list[HeadlineSlot]:
        return self._once(("headline", cohort.key),
                          lambda: headline_slots(self.data, cohort, self.cohorts, self.rows))

    def language_leaders(self, cohort: Cohort) -> list[LanguageLeader]:
        return fastest_by_language(self.ranked(cohort))

    def records(self, cohort: Cohort) -> list[RecordEvent]:
        """The cohort's record history (``policy.records``)."""
        return self._once(("records", cohort.key), lambda: cohort_record_events(cohort))

    def cohort_summaries(self) -> list[CohortSummary]:
        """Every cohort with its leader, runner-up and record history, as the site-wide pages list them."""
        return cohort_summaries(self.data, self.now)

    def summary(self) -> OperationFacts:
        """What the site-wide pages and listings read of the operation; its serialized form is the stored
        summary (``readmodel/summaries.py``)."""
        return self._once("summary", lambda: summary_of(self.data, self.cohort_summaries(), self.eligible_by_workload))

    def gaps(self, cohort: Cohort, gpus: list[str] | None = None) -> list[NotMeasured]:
        """The GPUs of ``gpus`` (the priority GPUs) without a run of the cohort's workload: floor, nearest GPU."""
        return not_measured(self.data, cohort, dict(self.cohorts), gpus)

    def missing_gpus(self, cohorts: list[Cohort]) -> list[str]:
        """The priority GPUs none of these cohorts measured."""
        covered = {gpu.slug for c in cohorts if (gpu := self.data.gpu_of(c.environment)) is not None}
        return [g for g in registry.priority_gpus() if g not in covered]

    def scaling(self, cohort: Cohort) -> ScalingChart | None:
        return scaling_chart(self.data, cohort, dict(self.cohorts))

    def shapes(self, cohort: Cohort) -> ShapeTable | None:
        return shape_table(self.data, cohort, dict(self.cohorts))

    def memory(self, workload: str | None, cohort: Cohort | None) -> MemoryPanel | None:
        slugs = [r.implementation.slug for r in self.rows(cohort)] if cohort else []
        return memory_panel(self.data, workload, cohort.environment if cohort else None, slugs)

    def leaderboards(self) -> list[Leaderboard]:
        return self._once("leaderboards", lambda: leaderboards(self.data))

    def ranking_notes(self, cohort: Cohort | None, workload_cohorts: list[Cohort]) -> list[RankingNote]:
        return ranking_notes(self.data, cohort, self.rows(cohort) if cohort else [], workload_cohorts)

    def other_gpus(self, selection: Selection, workload: str | None) -> list[OtherGpu]:
        return other_gpus(self.data, selection.cohorts, selection.cohort, workload)

    def implementation_lines(self, cohort: Cohort | None) -> list[ImplementationSummary]:
        """Each implementation line with eligible runs: its best row in the cohort and its multiple of the
        leader; availability follows the revision measured in the cohort, else its newest one."""
        rows = self.rows(cohort) if cohort else []
        lines: dict[str, list[Run]] = defaultdict(list)
        for run in self.data.runs:
            if run.eligible:
                lines[implementation_slug(self.data.implementations[run.implementation])].append(run)
        leader = next((r.median_ns for r in rows if r.rank), None)
        summaries = []
        for slug, runs in sorted(lines.items()):
            best = next((r for r in rows if r.implementation.slug == slug), None)
            newest = max(runs, key=lambda r: r.observed_at)
            summaries.append(ImplementationSummary(
                implementation=best.implementation if best else implementation_ref(self.data, newest.implementation),
                workloads_measured=len({r.workload for r in runs}),
                best_ns_in_cohort=best.median_ns if best else None,
                vs_leader=ratio(best.median_ns, leader) if best else None,
                best_run_id=best.run_id if best else None,
                evidence=best.evidence if best else None,
            ))
        return sorted(summaries,
                      key=lambda s: (s.best_ns_in_cohort is None, s.best_ns_in_cohort or 0, s.implementation.slug))

    def recommendation(self, workload: str, gpu: GpuSpec, mode: str | None = None) -> Recommendation:
        """What to run for ``workload`` (a digest) on ``gpu``: the fastest usable row of its cohorts there."""
        return self._once(("use", workload, gpu.slug, mode),
                          lambda: build_recommendation(self.data, workload, gpu, mode, self.rows))

    def recommendation_for(self, cohort: Cohort) -> Recommendation | None:
        """The recommendation for the cohort's workload, GPU and timed region (None: a GPU the table lacks)."""
        gpu = self.data.gpu_of(cohort.environment)
        if gpu is None:
            return None
        return self.recommendation(cohort.workload, gpu, self.data.protocols[cohort.protocol].spec.timed_region)


def operation_model(data: OperationData, now: datetime) -> OperationModel:
    """The model of a loaded operation for this clock: kept on the operation (the latest clock only, so a
    long-lived server keeps one per operation), rebuilt when the clock or its GPUs' attainable figures move."""
    key = (now, tuple(sorted(data.attainable.items())))
    kept = data.memo.get("model")
    if kept is None or kept[0] != key:
        kept = (key, OperationModel(data, now))
        data.memo["model"] = kept
    return kept[1]


def model_of(catalog: Catalog, slug: str, now: datetime) -> OperationModel:
    """The model of operation ``slug`` as the catalog holds it now (``readmodel.loading``)."""
    return operation_model(load_operation(catalog, slug), now)


def recommend(catalog: Any, slug: str, workload: str, gpu_slug: str, *, mode: str | None = None,
              now: datetime) -> Recommendation:
    """``ki use``, ``GET /api/v1/use`` and ``recommend_kernel``: ``workload`` is a workload digest (or its
    12-digit key) of operation ``slug``."""
    model = model_of(catalog, slug, now)
    digest = next((d for d in model.data.workloads if workload in (d, workload_key(d))), None)
    if digest is None:
        raise NotFound(f"workload {workload!r} is not a workload of {slug}")
    gpu = registry.gpus().get(gpu_slug)
    if gpu is None:
        raise NotFound(f"no GPU {gpu_slug!r} in the datasheet table; list them at /api/v1/gpus")
    return model.recommendation(digest, gpu, mode)


def recommend_for_cohort(catalog: Any, slug: str, cohort: str, *, now: datetime) -> Recommendation | None:
    """The operation page's "Use this" box: the recommendation for the selected cohort's workload, GPU
    and timed region (None when the cohort's GPU is not in the datasheet table)."""
    model = model_of(catalog, slug, now)
    chosen = model.cohort(cohort)
    if chosen is None:
        raise NotFound(f"cohort {cohort!r} is not a cohort of {slug}")
    return model.recommendation_for(chosen)
