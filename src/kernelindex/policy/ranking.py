"""ranking-v1 inside one cohort: ascending median, dense ranks.

Source-native cohorts: only equal values tie; a row whose p20–p80 interval overlaps the row
above is marked "within noise". Runner cohorts: two runs tie when their 95% confidence
intervals overlap or their medians differ by less than 1%; a run joins a tie chain only if it
ties with every member. Inside a tie, rows are ordered by median (then evidence, newest, id): the
first row is always the fastest median, so the headline, the record and every ratio name it and a
margin over the runner-up is never below 1.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from kernelindex.policy.evidence import LEVEL_ORDER
from kernelindex.policy.ratios import ratio

POLICY = "ranking-v1"
TIE_RELATIVE = 0.01


@dataclass(frozen=True)
class Rankable:
    id: str
    median_ns: int
    low_ns: int | None  # p20 (native) or CI95 low (runner)
    high_ns: int | None
    evidence: str
    observed_at: datetime


@dataclass(frozen=True)
class Ranked:
    item: Rankable
    rank: int
    tied: bool  # shares its rank with another row
    within_noise: bool  # interval overlaps the row above (native cohorts)
    vs_first: float | None  # median / leader's median (None if the leader's median is not positive)

    @property
    def label(self) -> str:
        return f"{self.rank}=" if self.tied else str(self.rank)


def _intervals_overlap(a: Rankable, b: Rankable) -> bool:
    """Two runs' intervals overlap; a run without an interval overlaps nothing."""
    if a.low_ns is None or a.high_ns is None or b.low_ns is None or b.high_ns is None:
        return False
    return a.low_ns <= b.high_ns and b.low_ns <= a.high_ns


def runner_tie(a: Rankable, b: Rankable) -> bool:
    """Runner runs tie when their medians differ by less than TIE_RELATIVE of the smaller one, or
    their confidence intervals overlap."""
    close = abs(a.median_ns - b.median_ns) < TIE_RELATIVE * min(a.median_ns, b.median_ns)
    return close or _intervals_overlap(a, b)


def _groups(items: list[Rankable], native: bool) -> list[list[Rankable]]:
    groups: list[list[Rankable]] = []
    for item in items:
        current = groups[-1] if groups else None
        if current is not None and (
            item.median_ns == current[0].median_ns if native else all(runner_tie(item, m) for m in current)
        ):
            current.append(item)
        else:
            groups.append([item])
    return groups


def _display_key(item: Rankable) -> tuple:
    return (item.median_ns, LEVEL_ORDER.get(item.evidence, 99), -item.observed_at.timestamp(), item.id)


def rank(items: Sequence[Rankable], *, native: bool) -> list[Ranked]:
    """Ranks by median (then id). Source-native cohorts tie only on equal medians and mark a run
    within noise of the one above when their intervals (95% CI, else p20–p80) overlap; runner cohorts tie on
    :func:`runner_tie`. Tied runs share a rank and are listed by median, then evidence, then newest first."""
    ordered = sorted(items, key=lambda r: (r.median_ns, r.id))
    if not ordered:
        return []
    leader = ordered[0].median_ns
    result: list[Ranked] = []
    previous: Rankable | None = None
    for position, group in enumerate(_groups(ordered, native), start=1):
        for item in sorted(group, key=_display_key):
            noisy = (
                native
                and previous is not None
                and item.median_ns != previous.median_ns
                and (_intervals_overlap(item, previous))
            )
            result.append(Ranked(item, position, len(group) > 1, noisy, ratio(item.median_ns, leader)))
            previous = item
    return result


def one_per_implementation(items: Sequence[tuple[str, Rankable]]) -> tuple[list[Rankable], dict[str, list[str]]]:
    """Never two ranks for one implementation in a cohort: ``items`` are (implementation, run) pairs;
    runs of one implementation in one cohort measure the same thing (Liger's seq and hidden sweeps
    meeting at one shape, the same case in two of a source's files), so they become one row. The row's
    figure is the median of the replicates' figures (of an even count, the mean of the two middle ones:
    never the faster of a pair); it stands under the id of the middle replicate (the lower middle of an
    even count), the others are its replicates. Returns the rows to rank and, per representative id, the
    ids of its other replicates."""
    by_implementation: dict[str, list[Rankable]] = {}
    for implementation, item in items:
        by_implementation.setdefault(implementation, []).append(item)
    rows: list[Rankable] = []
    replicates: dict[str, list[str]] = {}
    for group in by_implementation.values():
        group.sort(key=lambda r: (r.median_ns, r.id))
        chosen = group[(len(group) - 1) // 2]
        if len(group) % 2 == 0:
            chosen = replace(chosen, median_ns=round(statistics.median(r.median_ns for r in group)))
        rows.append(chosen)
        if len(group) > 1:
            replicates[chosen.id] = [r.id for r in group if r.id != chosen.id]
    return rows, replicates
