"""The resolver's view of ranked cohorts and where they come from, shared by the resolver, its
chooser and its messages (and filled by :mod:`kernelindex.resolve.source`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from kernelindex.policy.evidence import VERIFIED_LEVELS
from kernelindex.policy.selection import MODE_ORDER
from kernelindex.resolve.run_facts import RunFacts
from kernelindex.resolve.vocabulary import Vocabulary


@dataclass(frozen=True)
class LeaderboardScores:
    """An operation's suite-scoped leaderboard score runs on one GPU: they rank the problem's whole
    benchmark suite, so they are in no workload's cohort (the operation page ranks them apart)."""

    gpu: str | None
    gpu_label: str
    runs: int


@dataclass(frozen=True)
class OperationEvidence:
    """What the search chooser weighs of an operation, read from its stored summary without loading its
    runs: its eligible runs (counted as its page and the operations listing count them, replicates
    included), those on each GPU (registry slug), and its leaderboard score runs per GPU."""

    eligible_runs: int
    gpu_runs: tuple[tuple[str, int], ...] = ()
    scores: tuple[LeaderboardScores, ...] = ()


class CohortSource(Protocol):
    """Where runs come from: the catalog's read model (see :mod:`kernelindex.resolve.source`)."""

    def version(self) -> int: ...

    def vocabulary(self) -> Vocabulary: ...

    def priority_gpus(self) -> Sequence[str]: ...

    def cohorts(self, operation: str) -> Sequence[RankedCohort]: ...

    def operations(self) -> list[str]: ...

    def evidence(self, operations: Sequence[str]) -> Mapping[str, OperationEvidence]:
        """Of these operations, those the catalog holds, by slug (their runs not loaded)."""
        ...

    def leaderboard_scores(self, operation: str) -> Sequence[LeaderboardScores]: ...


@dataclass(frozen=True)
class RankedCohort:
    """One cohort with its ranking computed over all eligible runs (filter-independent)."""

    key: str
    sample: RunFacts
    ranked: tuple[tuple[RunFacts, int, str, bool, float | None], ...]  # run, rank, label, within_noise, vs_first
    excluded: tuple[RunFacts, ...]
    order: tuple = ()  # display order: mode, priority GPU, GPU, axes, native first (see order_key)
    statistic: str = ""  # what its ranking orders by, in a few words (readmodel.ranking_notes)

    @property
    def eligible_runs(self) -> int:
        return len(self.ranked)


def order_key(sample: RunFacts, key: str, priority_gpus: Sequence[str], ranks_a_run: bool = True,
              verified: bool = False) -> tuple:
    """Forward before backward; within a region, cohorts that rank a run before those that rank none (all
    superseded, say), then priority GPUs, then the workload; of one GPU and workload, a cohort ranking a verified
    run before a reported one (the default-cohort rule's order, ``policy.selection``), then source-native first:
    computed once per cohort."""
    priority = list(priority_gpus)
    gpu_rank = priority.index(sample.gpu) if sample.gpu is not None and sample.gpu in priority else len(priority)
    return (MODE_ORDER.get(sample.mode, 9), 0 if ranks_a_run else 1, gpu_rank, sample.gpu_label,
            tuple(sorted(sample.axes.items())), 0 if verified else 1, 0 if sample.native else 1, key)


def ranks_verified(ranked: Sequence[tuple[RunFacts, int, str, bool, float | None]]) -> bool:
    """Whether a cohort's ranking holds a trusted runner's run (verified or replicated)."""
    return any(run.evidence in VERIFIED_LEVELS for run, *_ in ranked)


