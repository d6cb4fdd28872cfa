"""The search lede counts the cohorts that rank a run, not those holding only superseded runs (issue 22)."""

from __future__ import annotations

from datetime import UTC, datetime

from kernelindex.resolve.cohorts import RankedCohort
from kernelindex.resolve.messages import status_of
from kernelindex.resolve.request import ResolveRequest
from kernelindex.resolve.run_facts import ImplementationFacts, RunFacts
from kernelindex.resolve.vocabulary import registry_vocabulary

LIGER = ImplementationFacts(slug="liger", title="Liger", language="triton", license="BSD-2-Clause", usable=True)


def _run(run_id: str, cohort: str, eligible: bool) -> RunFacts:
    return RunFacts(run_id=run_id, operation="rope", cohort_key=cohort, workload_key="w", axes={"seq": 2048},
                    dtypes={"x": "bf16"}, gpu="h200-sxm", gpu_label="H200", arch="sm_90", mode="forward",
                    protocol_key="p", native=False, implementation=LIGER, evidence="verified", eligible=eligible,
                    median_ns=1000, p20_ns=990, p80_ns=1010, observed_at=datetime(2026, 12, 1, tzinfo=UTC),
                    source="kernelindex-runner")


def _cohort(key: str, ranked: int, superseded: int) -> RankedCohort:
    runs = [_run(f"{key}{i}", key, True) for i in range(ranked)]
    old = tuple(_run(f"{key}old{i}", key, False) for i in range(superseded))
    sample = (runs or list(old))[0]
    return RankedCohort(key, sample, tuple((r, i + 1, str(i + 1), False, 1.0) for i, r in enumerate(runs)), old)


def _message(*cohorts: RankedCohort) -> str:
    return status_of(ResolveRequest(operation="rope"), registry_vocabulary(), cohorts, [], [], [], 0, None)[1]


def test_cohorts_holding_only_superseded_runs_are_not_counted_as_answering() -> None:
    message = _message(_cohort("a", 3, 1), _cohort("b", 0, 2), _cohort("c", 0, 1))
    assert "3 eligible runs in 1 cohort(s), and 2 cohort(s) with no eligible run" in message
    assert "in 3 cohort(s)" not in message


def test_every_cohort_ranking_a_run_is_counted() -> None:
    message = _message(_cohort("a", 2, 0), _cohort("b", 1, 1))
    assert message.startswith("Exact evidence: 3 eligible runs in 2 cohort(s) (the first 0 listed")
    assert "no eligible run" not in message


def test_no_cohort_ranking_a_run_says_no_eligible_run() -> None:
    message = _message(_cohort("a", 0, 2))
    assert message.startswith("No eligible run for Operation Rotary position embedding (rope)")
    assert "0 eligible" not in message
