"""Defaults (docs/design.md §4): which workload and which cohort an operation page selects, and the
baseline multiple."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from kernelindex.policy.ratios import ratio

MODE_ORDER = {"forward": 0, "backward": 1, "forward+backward": 2, "forward-no-grad": 3}


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


def default_workload(choices: Sequence[WorkloadChoice]) -> str | None:
    """Most eligible runs; ties → smallest compulsory traffic, then canonical order."""
    if not choices:
        return None
    return min(choices, key=lambda c: (-c.eligible_runs, c.floor_bytes, c.canonical)).key


def default_cohort(choices: Sequence[CohortChoice], priority_gpus: Sequence[str]) -> str | None:
    """Most eligible runs; ties → forward first, then the longest-standing cohort (so a new
    cohort of equal size does not flip the default view), then the priority-GPU order."""
    if not choices:
        return None

    def key(c: CohortChoice) -> tuple:
        gpu_rank = priority_gpus.index(c.gpu) if c.gpu in priority_gpus else len(priority_gpus)
        first = c.first_observed.timestamp() if c.first_observed else float("inf")
        return (-c.eligible_runs, MODE_ORDER.get(c.mode, 9), first, gpu_rank, c.key)

    return min(choices, key=key).key


def baseline_multiple(leader_median_ns: int, baseline_medians_ns: Sequence[int]) -> float | None:
    """'N× faster than baseline' = the fastest baseline median / the leader's median."""
    if not baseline_medians_ns:
        return None
    return ratio(min(baseline_medians_ns), leader_median_ns)
