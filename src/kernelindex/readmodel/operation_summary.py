"""The summary of one operation (``OperationModel.summary``): what the site-wide pages (home, records, GPUs,
challenges, the operations index, the feed) and the catalog-wide listings read of it, so that none of them loads
every run — its counts, implementation lines, per-GPU figures, the GPUs each measured workload has, its cohort
summaries with their leaders and record history, and its verified runs' rates. Its serialized form is the stored
summary (``readmodel/summaries.py`` writes it and reads it back)."""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from kernelindex.policy.evidence import VERIFIED_LEVELS
from kernelindex.readmodel import labels
from kernelindex.readmodel.attainable import AttainableRates, attainable_rates
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.leaderboard import ScoreShare, score_shares
from kernelindex.readmodel.listing_facts import Entry, implementation_lines, workload_entries
from kernelindex.readmodel.operation_data import OperationData
from kernelindex.readmodel.pages_common import CohortSummary, EventView

T = TypeVar("T")
LATEST_RECORDS = 8  # the newest record events the home page lists


@dataclass
class GpuShare(JsonModel):
    """What one operation measured on one GPU (registry slug)."""

    gpu: str
    eligible_runs: int
    workloads_measured: int
    cohorts: int  # cohorts with an eligible run
    ceiling_environments: list[str] = field(default_factory=list)  # its environments that measured a ceiling


@dataclass
class OperationFacts(JsonModel):
    slug: str
    title: str
    family: str
    digest: str
    description: str
    aliases: list[str]
    workloads_total: int
    eligible_runs: int
    eligible_workloads: int
    eligible_implementations: int  # implementation slugs with an eligible run
    verified_runs: int
    verified_regions: list[str]  # timed regions with an eligible verified run
    lines: list[str]  # implementation lines (name, or digest when unnamed)
    gpus: list[GpuShare]
    scores: list[ScoreShare]  # its suite-scoped leaderboard score runs per GPU (in no cohort, not in ``gpus``)
    # Each workload with an eligible run: the GPUs (slug, or product when the registry lacks it) that have one
    measured: dict[str, list[str]]
    workload_labels: dict[str, str]  # of the measured workloads
    leading_cohorts: int  # cohorts with a leader (record holder)
    newest: list[CohortSummary]  # the cohorts holding its ``LATEST_RECORDS`` newest record events
    implementations: list[Entry]  # its implementation lines with a ranked run (``listing_facts``)
    # Per GPU, the best rates its verified runs reached, which the attainable ceilings are the maximum of
    # (``readmodel/attainable.py`` reads them here instead of loading the operation's runs)
    attainable: AttainableRates
    # Every cohort's summary: read on first use (the home page and the GPU index need none of them)
    cohort_source: Callable[[], list[CohortSummary]] = field(repr=False, compare=False)
    # Its workload cases with a run (``listing_facts``): read on first use, by the workloads listing only
    workload_source: Callable[[], list[Entry]] = field(repr=False, compare=False)

    @cached_property
    def cohorts(self) -> list[CohortSummary]:
        return self.cohort_source()

    @cached_property
    def workloads(self) -> list[Entry]:
        return self.workload_source()

    def cohorts_with_leader(self) -> list[CohortSummary]:
        return self.derived("cohorts-with-leader", lambda: [c for c in self.cohorts if c.leader])

    def derived(self, name: Hashable, compute: Callable[[], T]) -> T:
        """What a site-wide listing derives from this operation alone (its records' JSON, its coverage gaps),
        kept with the summary, which is kept per version of the operation and day: after a publication a
        listing recomputes its part of the operations the publication changed and reuses every other part."""
        memo: dict[Hashable, Any] = self.__dict__.setdefault("_derived", {})  # not a field: never stored
        if name not in memo:
            memo[name] = compute()
        value: T = memo[name]
        return value


def newest_events(cohorts: list[CohortSummary], count: int = LATEST_RECORDS) -> list[tuple[CohortSummary, EventView]]:
    """The ``count`` newest record events of these cohorts, newest first, with their cohorts."""
    return heapq.nlargest(count, ((c, e) for c in cohorts for e in c.events),
                          key=lambda ce: (ce[1].at, ce[0].operation, ce[0].key))


def summary_of(data: OperationData, cohorts: list[CohortSummary],
               eligible_by_workload: Mapping[str, int]) -> OperationFacts:
    """What the site-wide pages read of the operation, from what its model derived (``OperationModel.summary``):
    its cohort summaries and its eligible runs per workload."""
    eligible = [r for r in data.runs if r.eligible]
    verified = [r for r in eligible if r.evidence in VERIFIED_LEVELS]
    measured: dict[str, set[str]] = defaultdict(set)
    for run in eligible:
        gpu = data.gpu_of(run.environment)
        measured[run.workload].add(gpu.slug if gpu else data.environments[run.environment].spec.hardware.product)
    meta = data.operation.metadata
    newest = newest_events([c for c in cohorts if c.leader])
    workloads = workload_entries(data)
    return OperationFacts(
        slug=data.slug, title=data.title, family=data.operation.spec.family, digest=data.digest,
        description=meta.description or "", aliases=list(meta.aliases),
        workloads_total=len(data.workloads), eligible_runs=sum(eligible_by_workload.values()),
        eligible_workloads=len(eligible_by_workload),
        eligible_implementations=len({labels.implementation_slug(data.implementations[r.implementation])
                                      for r in eligible}),
        verified_runs=len(verified),
        verified_regions=sorted({data.protocols[r.protocol].spec.timed_region for r in verified}),
        lines=sorted({impl.metadata.name or digest for digest, impl in data.implementations.items()}),
        gpus=_gpu_shares(data),
        scores=score_shares(data),
        measured={workload: sorted(gpus) for workload, gpus in sorted(measured.items())},
        workload_labels={w: labels.workload_label(data.operation, data.workloads[w]) for w in sorted(measured)},
        leading_cohorts=sum(1 for c in cohorts if c.leader),
        newest=[c for c in cohorts if any(c is n for n, _ in newest)],
        implementations=implementation_lines(data),
        attainable=attainable_rates(data),
        cohort_source=lambda: cohorts,
        workload_source=lambda: workloads,
    )


def _gpu_shares(data: OperationData) -> list[GpuShare]:
    environments: dict[str, list[str]] = defaultdict(list)
    for digest in sorted(data.environments):
        if (gpu := data.gpu_of(digest)) is not None:
            environments[gpu.slug].append(digest)
    shares = []
    for slug, digests in sorted(environments.items()):
        runs = [r for r in data.runs if r.eligible and r.environment in digests]
        ceilings = [d for d in digests if data.environments[d].spec.copy_bandwidth_bytes_per_s]
        shares.append(GpuShare(slug, len(runs), len({r.workload for r in runs}), len({r.cohort_key for r in runs}),
                               ceilings))
    return shares
