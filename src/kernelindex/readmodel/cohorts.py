"""Cohorts of one operation: grouping, ranking and records, from loaded data and policy."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from kernelindex.domain.instants import as_utc
from kernelindex.policy.eligibility import eligible_apart_from_corrections
from kernelindex.policy.ranking import Rankable, Ranked, one_per_implementation, rank
from kernelindex.policy.reasons import Reason
from kernelindex.policy.records import RecordEvent, record_events
from kernelindex.readmodel.loading import OperationData, Run
from kernelindex.readmodel.region_work import does_other_regions_work


@dataclass
class Cohort:
    key: str
    workload: str
    protocol: str
    environment: str
    runs: list[Run]  # every run of the cohort, eligible or not
    ranked: list[Ranked]
    native: bool
    # One row per implementation: per ranked run, the other eligible runs of its implementation here
    replicates: dict[str, list[str]] = field(default_factory=dict)
    # Eligible runs shown beside the ranking, never in it: a backward that only scales the gradient its
    # forward computed (``region_work.does_other_regions_work``), so no headline, record or margin.
    aside: list[Rankable] = field(default_factory=list)

    @property
    def eligible(self) -> list[Run]:
        return [r for r in self.runs if r.eligible]

    def represented_by(self, digest: str) -> str | None:
        """The ranked run standing for this replicate of the same implementation, if it is one."""
        return next((lead for lead, others in self.replicates.items() if digest in others), None)

    def replicate_reason(self, digest: str) -> Reason | None:
        """Why this eligible run has no rank of its own: another measurement of its implementation stands for it,
        or it is shown beside the ranking because it does another region's work (every door says so)."""
        aside = {a.id for a in self.aside}
        if digest in aside or self.represented_by(digest) in aside:
            return Reason("OTHER_REGIONS_WORK", ASIDE_WORDS)
        lead = self.represented_by(digest)
        if lead is None:
            return None
        return Reason("REPLICATE", f"Another measurement of the same implementation in this cohort: one row per "
                      f"implementation, so run {self.run(lead).run_id} (the middle replicate, its row showing the "
                      "median of the replicates' figures) stands for it in the ranking and this run is its replicate.")

    @property
    def runner(self) -> str | None:
        """The runner that measured the cohort's runs (None: a source reported them, or several runners did)."""
        names = {r.runner for r in self.runs}
        return names.pop() if len(names) == 1 else None

    def figure(self, digest: str) -> int | None:
        """The figure a run's row ranks by: the median of its implementation's replicates here when it
        stands for them (``policy.ranking.one_per_implementation``), else its own median."""
        item = next((e.item for e in self.ranked if e.item.id == digest), None) \
            or next((a for a in self.aside if a.id == digest), None)
        return item.median_ns if item else self.run(digest).median_ns

    @property
    def leader_ns(self) -> int | None:
        """The figure of the cohort's first row."""
        return self.ranked[0].item.median_ns if self.ranked else None

    @property
    def leader(self) -> Run | None:
        return self.run(self.ranked[0].item.id) if self.ranked else None

    def run(self, digest: str) -> Run:
        return next(r for r in self.runs if r.digest == digest)


ASIDE_WORDS = ("Shown beside the ranking, not in it: this backward only scales a gradient its forward computed, so "
               "it leaves out work the ranked rows do. Left out of the headline, records and margins; compare "
               "forward+backward.")


def rankable(run: Run) -> Rankable:
    low, high = run.interval
    return Rankable(run.digest, run.median_ns or 0, low, high, run.evidence, run.observed_at)


def cohorts_of(data: OperationData) -> dict[str, Cohort]:
    """The operation's cohorts by key, each ranked: computed once per loaded operation."""
    return data.derived("cohorts", lambda: _cohorts(data))


def _cohorts(data: OperationData) -> dict[str, Cohort]:
    grouped: dict[str, list[Run]] = defaultdict(list)
    for run in data.runs:
        grouped[run.cohort_key].append(run)
    cohorts = {}
    for key, runs in grouped.items():
        first = runs[0]
        native = data.protocols[first.protocol].spec.native
        eligible = [r for r in runs if r.eligible]
        elsewhere = {r.digest for r in eligible if does_other_regions_work(data, r)}
        rows, replicates = one_per_implementation([(r.implementation, rankable(r)) for r in eligible
                                                   if r.digest not in elsewhere])
        aside, more = one_per_implementation([(r.implementation, rankable(r)) for r in eligible
                                              if r.digest in elsewhere])
        ranked = rank(rows, native=native)
        cohorts[key] = Cohort(key, first.workload, first.protocol, first.environment, runs, ranked, native,
                              {**replicates, **more}, sorted(aside, key=lambda r: (r.median_ns, r.id)))
    return cohorts


def cohort_record_events(cohort: Cohort) -> list[RecordEvent]:
    """Runs eligible apart from corrections, walked in time; corrections applied at their time. Rows set aside (they
    do another region's work) hold no record, nor does a run faster than its GPU's measured ceiling for its mix
    (``readmodel/ceiling_checks``) until explained."""
    aside = {r.id for r in cohort.aside} | {d for r in cohort.aside for d in cohort.replicates.get(r.id, [])}
    candidates = [r for r in cohort.runs if r.eligibility and eligible_apart_from_corrections(r.eligibility)
                  and r.digest not in aside and not (r.ceiling_check and r.ceiling_check.exceeds)]
    removals = [(r.retracted["at"], r.digest) for r in candidates if r.retracted]
    removals += [(r.superseded_by["at"], r.digest) for r in candidates if r.superseded_by]
    removals = [(as_utc(at), d) for at, d in removals]
    return record_events([rankable(r) for r in candidates], removals)
