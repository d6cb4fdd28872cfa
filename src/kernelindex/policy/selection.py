"""Defaults (docs/design.md §4): which workload and which cohort a view of an operation leads with, and
the baseline multiple.

One rule for every door (the page, its JSON twin, the CLI, MCP and ``ki use``): a view leads with the
best evidence there is. Among the cohorts with eligible runs: those on a GPU the query names first (when
it has any); then verified over reported (a cohort holding a trusted runner's eligible run); then the
newest GPU architecture with that evidence; then forward first and the longest-standing cohort (so a new
cohort does not flip the view), then the most eligible runs and the priority-GPU order."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from kernelindex.policy.ratios import ratio

MODE_ORDER = {"forward": 0, "backward": 1, "forward+backward": 2, "forward-no-grad": 3}

# The year each GPU architecture first shipped, so "newest" compares NVIDIA's compute capabilities and AMD's
# ISAs alike; inside a year the architecture's own number decides (Hopper sm_90 after Ada sm_89). An
# architecture not listed is older than every listed one.
ARCHITECTURE_YEAR = {
    "sm_70": 2017, "sm_75": 2018, "sm_80": 2020, "sm_86": 2020, "sm_89": 2022, "sm_90": 2022, "sm_100": 2024,
    "sm_120": 2025, "gfx90a": 2021, "gfx942": 2023, "gfx950": 2025,
}


@dataclass(frozen=True)
class WorkloadChoice:
    key: str
    eligible_runs: int
    floor_bytes: int
    canonical: tuple  # axis values in the operation's declared axis order


@dataclass(frozen=True)
class CohortChoice:
    key: str
    eligible_runs: int
    mode: str
    gpu: str | None  # registry slug
    first_observed: datetime | None
    verified: bool = False  # holds an eligible run of a trusted runner (verified or replicated)
    architecture: str | None = None  # the GPU's architecture (sm_90, gfx942), when known
    workload: str = ""


def architecture_age(architecture: str | None) -> tuple[int, int]:
    """A sort key: larger is newer (the year it shipped, then the architecture's own number)."""
    if not architecture:
        return (0, 0)
    number = re.search(r"\d+", architecture)
    return ARCHITECTURE_YEAR.get(architecture, 0), int(number.group()) if number else 0


def leading(choices: Sequence[CohortChoice], asked_gpus: Collection[str] = ()) -> list[CohortChoice]:
    """The cohorts the rule keeps before its tie-breaks: on an asked GPU (when any are), then verified
    (when any are), then of the newest architecture among those."""
    pool = list(choices)
    if asked_gpus:
        pool = [c for c in pool if c.gpu in asked_gpus] or pool
    pool = [c for c in pool if c.verified] or pool
    if not pool:
        return []
    newest = max(architecture_age(c.architecture) for c in pool)
    return [c for c in pool if architecture_age(c.architecture) == newest]


def default_workload(choices: Sequence[WorkloadChoice], leading_workloads: Collection[str] = ()) -> str | None:
    """Among the workloads of the leading cohorts (every workload when none is given): most eligible runs;
    ties → smallest compulsory traffic, then canonical order."""
    pool = [c for c in choices if c.key in leading_workloads] or list(choices)
    if not pool:
        return None
    return min(pool, key=lambda c: (-c.eligible_runs, c.floor_bytes, c.canonical)).key


def default_cohort(choices: Sequence[CohortChoice], priority_gpus: Sequence[str],
                   asked_gpus: Collection[str] = ()) -> str | None:
    """The leading cohorts (:func:`leading`); ties → forward first, then the longest-standing cohort, then
    the most eligible runs, then the priority-GPU order."""
    pool = leading(choices, asked_gpus)
    if not pool:
        return None

    def key(c: CohortChoice) -> tuple:
        gpu_rank = priority_gpus.index(c.gpu) if c.gpu in priority_gpus else len(priority_gpus)
        first = c.first_observed.timestamp() if c.first_observed else float("inf")
        return (MODE_ORDER.get(c.mode, 9), first, -c.eligible_runs, gpu_rank, c.key)

    return min(pool, key=key).key


def baseline_multiple(leader_median_ns: int, baseline_medians_ns: Sequence[int]) -> float | None:
    """'N× faster than baseline' = the fastest baseline median / the leader's median."""
    if not baseline_medians_ns:
        return None
    return ratio(min(baseline_medians_ns), leader_median_ns)
