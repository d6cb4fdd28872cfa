"""Suite-scoped leaderboard scores (GPU MODE KernelBot): each source-native score aggregates a
problem's benchmark shapes, so it belongs to the problem, not to one workload. Ranked only among
scores of the same suite, GPU, protocol and statistic (their cohort), never mixed with latencies."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from kernelindex.domain.titles import implementation_title
from kernelindex.policy.eligibility import EligibilityFacts, eligibility
from kernelindex.policy.ranking import Rankable, rank
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.labels import gpu_label, implementation_slug
from kernelindex.readmodel.loading import OperationData, Run

# Scores are seconds; ranking-v1 orders integers, so scores are compared in femtoseconds (exact
# for the source's float values, so only equal scores tie).
_SCALE = 1e15


@dataclass
class LeaderboardRow(JsonModel):
    rank_label: str
    run_id: str
    implementation_slug: str
    implementation_title: str
    score_s: float
    vs_first: float | None
    observed_at: datetime


@dataclass
class Leaderboard(JsonModel):
    suite: str
    suite_cases: int
    gpu: str
    statistic: str
    scope: str
    rows: list[LeaderboardRow] = field(default_factory=list)
    not_ranked: int = 0  # failed, retracted or superseded score runs


@dataclass
class ScoreShare(JsonModel):
    """An operation's suite-scoped score runs on one GPU (registry slug; None, labelled by its product, when
    the registry lacks it): counted whatever their eligibility, as the leaderboards list them."""

    gpu: str | None
    gpu_label: str
    runs: int


def score_shares(data: OperationData) -> list[ScoreShare]:
    """The operation's score runs per GPU, by label (stored in its summary: the search chooser reads them)."""
    counts: Counter[tuple[str | None, str]] = Counter()
    for run in data.score_runs:
        gpu = data.gpu_of(run.environment)
        product = data.environments[run.environment].spec.hardware.product
        counts[(gpu.slug, gpu.short) if gpu else (None, product)] += 1
    return [ScoreShare(slug, label, n) for (slug, label), n in sorted(counts.items(), key=lambda item: item[0][1])]


def _eligible(run: Run) -> bool:
    facts = EligibilityFacts(run.status, True, run.retracted is not None, run.superseded_by is not None,
                             int(run.score.value * _SCALE), invalid_stored=run.invalid_stored)
    return eligibility(facts).eligible


def leaderboards(data: OperationData) -> list[Leaderboard]:
    by_cohort: dict[str, list[Run]] = defaultdict(list)
    for run in data.score_runs:
        by_cohort[run.cohort_key].append(run)
    boards = [_board(data, runs) for runs in by_cohort.values()]
    return sorted(boards, key=lambda b: (b.suite, b.gpu, b.statistic))


def _board(data: OperationData, runs: list[Run]) -> Leaderboard:
    first = runs[0]
    suite = data.suites.get(first.workload)
    score = first.score
    eligible = {r.digest: r for r in runs if _eligible(r)}
    ranked = rank([Rankable(r.digest, int(r.score.value * _SCALE), None, None, r.evidence, r.observed_at)
                   for r in eligible.values()], native=True)
    board = Leaderboard(
        suite=(suite.metadata.title if suite else None) or "benchmark suite",
        suite_cases=len(suite.spec.cases) if suite else 0,
        gpu=gpu_label(data.environments[first.environment]),
        statistic=score.statistic,
        scope=score.scope,
        not_ranked=len(runs) - len(eligible),
    )
    for entry in ranked:
        run = eligible[entry.item.id]
        impl = data.implementations[run.implementation]
        board.rows.append(LeaderboardRow(
            entry.label, run.run_id, implementation_slug(impl),
            implementation_title(impl.metadata.title, implementation_slug(impl), impl.metadata.labels.get("authors")),
            run.score.value, entry.vs_first, run.observed_at))
    return board
