"""What a resolution says in words: its status and message, and the notes beside the answer."""

from __future__ import annotations

from collections.abc import Sequence

from kernelindex import registry
from kernelindex.policy.reasons import Reason
from kernelindex.resolve.cohorts import LeaderboardScores, RankedCohort
from kernelindex.resolve.interpret import interpretation
from kernelindex.resolve.request import ResolveRequest
from kernelindex.resolve.results import CohortResult, Mismatch, Nearest
from kernelindex.resolve.vocabulary import Vocabulary


def without_cohorts(req: ResolveRequest, scores: Sequence[LeaderboardScores]) -> tuple[str, str]:
    """An operation with no workload runs: say so, or point at its leaderboard scores."""
    if not scores:
        return "no_runs", f"No runs of {req.operation} are in the catalog yet."
    matched = [s for s in scores if req.gpu and registry.gpu_may_be(req.gpu, s.gpu)]
    shown = matched or list(scores)
    where = ", ".join(f"{s.runs} on {s.gpu_label}" for s in shown)
    elsewhere = " (none on the GPU asked for; every GPU listed)" if req.gpu and not matched else ""
    return "leaderboard_only", (
        f"{req.operation} has no per-workload runs; its runs are suite-scoped leaderboard scores{elsewhere}: {where}. "
        f"Each score covers the problem's whole benchmark suite, so they are ranked among themselves in the "
        f"Leaderboard section of /operations/{req.operation}, never against one workload's latency.")


def status_of(req: ResolveRequest, vocab: Vocabulary, exact: Sequence[RankedCohort], shown: Sequence[CohortResult],
              other: Sequence[CohortResult], closest: list[tuple[RankedCohort, list[Mismatch]]],
              compatible_total: int, nearest: Nearest | None) -> tuple[str, str]:
    what = interpretation(req, vocab)
    if exact:
        return "exact", _exact_message(what, exact, shown)
    if other:
        return "other_protocols", (f"No run measured {req.mode} for {what}; "
                                   f"{len(other)} cohort(s) measured it under another protocol.")
    if nearest:
        sides = [f"{nearest.axis} {n.value}" for n in (nearest.below, nearest.above) if n]
        return "not_measured", (f"Not measured at {nearest.axis} {nearest.requested}; nearest measured: "
                                f"{' and '.join(sides)}.")
    if closest:
        fields = sorted({m.field for _, ms in closest for m in ms})
        return "no_exact_evidence", (f"No exact evidence for {what}; {compatible_total} compatible cohort(s) "
                                     f"differ in {', '.join(fields)}.")
    return "no_exact_evidence", f"No exact evidence for {what}."


def _exact_message(what: str, exact: Sequence[RankedCohort], shown: Sequence[CohortResult]) -> str:
    """How many eligible runs answer, in how many cohorts: only cohorts that rank a run count (a cohort
    whose runs were all superseded or excluded ranks none, and is listed with why each is not ranked)."""
    ranking = [c for c in exact if c.eligible_runs]
    listed = f" (the first {len(shown)} listed; bind more axes to narrow)" if len(shown) < len(exact) else ""
    if not ranking:
        return (f"No eligible run for {what}: its {len(exact)} exact cohort(s){listed} hold only runs that are "
                "not ranked (each is listed with why).")
    runs = sum(c.eligible_runs for c in ranking)
    unranked = len(exact) - len(ranking)
    without = f", and {unranked} cohort(s) with no eligible run" if unranked else ""
    visible = sum(len(c.rows) for c in shown)
    hidden = sum(len(c.hidden) for c in shown)
    filtered = f"; filters hide {hidden} of the {visible + hidden} listed rows" if hidden else ""
    return f"Exact evidence: {runs} eligible runs in {len(ranking)} cohort(s){without}{listed} for {what}{filtered}."


def filter_notes(req: ResolveRequest) -> tuple[Reason, ...]:
    if any(getattr(req, f) is not None for f in ("language", "implementation", "trust", "usable", "license", "source")):
        return (Reason("FILTERS_HIDE_NOT_RERANK",
                       "Filters hide rows; ranks are computed over every eligible run of the cohort."),)
    return ()


def variant_notes(req: ResolveRequest, exact: Sequence[RankedCohort]) -> tuple[Reason, ...]:
    labels = sorted({c.sample.gpu_label for c in exact if req.gpu and c.sample.gpu != req.gpu})
    if not labels:
        return ()
    return (Reason("GPU_VARIANT_NOT_RECORDED",
                   f"Cohorts on {', '.join(labels)} answer this request: the source named the GPU without its "
                   "variant, so they may be the one asked for; they rank only among themselves, never with a "
                   "specific variant's runs."),)
