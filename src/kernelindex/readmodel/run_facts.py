"""What the rules say of one run, as its evidence page and /compare show it: why it holds no rank, its evidence
level in a sentence, whether it is stale, its physical and attainable floors with its ratio to each (none for a
backward that skips the traffic the floor counts, as on the ranked rows), and a failed graph capture or
cross-check in words. Derived once per run by ``OperationModel.run_facts``; the pages lay it out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kernelindex.policy.capture import capture_failure_sentence, cross_check_sentence
from kernelindex.policy.cohorts import PEAK_MEMORY_LABEL
from kernelindex.policy.evidence import SENTENCES as EVIDENCE_SENTENCES
from kernelindex.policy.ratios import ratio
from kernelindex.policy.reasons import Reason
from kernelindex.policy.staleness import is_stale
from kernelindex.readmodel.cohorts import Cohort
from kernelindex.readmodel.floors import run_floors
from kernelindex.readmodel.operation_data import OperationData, Run
from kernelindex.readmodel.region_work import forward_work_note, skips_floor_traffic

_SUITE_SCOPED = Reason("SUITE_SCOPED", "A leaderboard score over the problem's benchmark suite: ranked only among "
                       "scores of the same suite, GPU and statistic (the operation page's Leaderboard), never "
                       "against a workload's latency.")
_SECOND_METRIC = Reason("SECOND_METRIC", f"A {PEAK_MEMORY_LABEL}: a second metric, never ranked against latency.")


@dataclass(frozen=True)
class RunFacts:
    not_ranked_reasons: list[dict[str, Any]]
    evidence_sentence: str
    stale: bool
    floor_ns: float | None  # the physical floor (datasheet)
    floor_ratio: float | None
    attainable_floor_ns: float | None  # the attainable floor (the best bandwidth seen sustained on the GPU)
    attainable_floor_ratio: float | None
    floor_latency: str | None  # the floors' latency term in words
    capture_failure: str | None  # why CUDA-graph capture failed, in words
    cross_check_failure: str | None  # runner v3: why the cross-check fell back to per-call events, in words


def run_facts(data: OperationData, run: Run, cohort: Cohort | None, now: datetime) -> RunFacts:
    floors = None if data.suites.get(run.workload) else run_floors(data, run)
    floor_ns = floors[0].floor_ns if floors else None
    attainable_ns = floors[1].floor_ns if floors and floors[1] else None
    recorded = run.spec.timing.raw.get("capture_failure")
    check = run.spec.timing.cross_check
    check_failure = check.detail if check and check.method == "per_call_events" and check.detail else None
    return RunFacts(
        not_ranked_reasons=_not_ranked_reasons(run, cohort),
        evidence_sentence=EVIDENCE_SENTENCES[run.evidence],
        stale=is_stale(run.observed_at, now),
        floor_ns=floor_ns, floor_ratio=_floor_ratio(data, run, floor_ns),
        attainable_floor_ns=attainable_ns, attainable_floor_ratio=_floor_ratio(data, run, attainable_ns),
        floor_latency=floors[0].latency_words if floors else None,
        capture_failure=capture_failure_sentence(recorded) if recorded else None,
        cross_check_failure=cross_check_sentence(check_failure) if check_failure else None,
    )


def _not_ranked_reasons(run: Run, cohort: Cohort | None) -> list[dict[str, Any]]:
    replicate = cohort.replicate_reason(run.digest) if cohort else None
    if replicate is not None:
        return [replicate.to_json()]
    if run.spec.score is not None:
        return [_SUITE_SCOPED.to_json()]
    if run.spec.memory is not None:
        return [_SECOND_METRIC.to_json()]
    return [r.to_json() for r in run.eligibility.reasons] if run.eligibility else []


def _floor_ratio(data: OperationData, run: Run, floor_ns: float | None) -> float | None:
    if skips_floor_traffic(forward_work_note(data, run)):
        return None
    return ratio(run.median_ns, floor_ns)


def multiples_of_fastest(medians: Mapping[str, int | None], eligible: set[str]) -> dict[str, float]:
    """Each run's median over the fastest median among the ``eligible`` runs (by run id): the N× of runs put
    side by side; a run without a median, or runs with no eligible fastest, have none."""
    fastest = min((m for run_id, m in medians.items() if run_id in eligible and m), default=None)
    found = {run_id: ratio(m, fastest) for run_id, m in medians.items()}
    return {run_id: m for run_id, m in found.items() if m is not None}
