"""Record events of one cohort: a new record only when a run beats the holder beyond noise,
or when a retraction changes the leader."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from kernelindex.policy.ranking import Rankable
from kernelindex.policy.ratios import ratio


@dataclass(frozen=True)
class RecordEvent:
    at: datetime
    kind: str  # "first" | "beaten" | "retraction"
    holder: str | None  # run id holding the record after the event
    previous: str | None
    median_ns: int | None
    margin: float | None  # previous median / new median


def beats_beyond_noise(challenger: Rankable, holder: Rankable) -> bool:
    """A challenger takes a record only with a lower median whose interval lies wholly below the
    holder's; when either has no interval, the lower median alone decides."""
    if challenger.median_ns >= holder.median_ns:
        return False
    if challenger.high_ns is None or holder.low_ns is None:
        return True
    return challenger.high_ns < holder.low_ns


def record_events(items: Sequence[Rankable], removals: Sequence[tuple[datetime, str]] = ()) -> list[RecordEvent]:
    """Walk runs by observed time (then id). ``items`` are the cohort's runs that are eligible
    apart from corrections; ``removals`` (time, run id) are retractions and supersessions,
    applied at their own time: removing the holder hands the record to the best run left."""
    timeline: list[tuple[datetime, int, str, Rankable | None]] = [
        (item.observed_at, 0, item.id, item) for item in items] + [
        (at, 1, run, None) for at, run in removals
    ]
    retracted: set[str] = set()
    seen: list[Rankable] = []
    holder: Rankable | None = None
    events: list[RecordEvent] = []
    for at, _, run_id, item in sorted(timeline, key=lambda t: (t[0], t[1], t[2])):
        if item is None:  # a removal
            retracted.add(run_id)
            if holder is not None and holder.id == run_id:
                previous, holder = holder, _best([s for s in seen if s.id not in retracted])
                events.append(_event(at, "retraction", holder, previous))
            continue
        if run_id in retracted:
            continue
        seen.append(item)
        if holder is None:
            holder = item
            events.append(_event(at, "first", item, None))
        elif beats_beyond_noise(item, holder):
            previous, holder = holder, item
            events.append(_event(at, "beaten", item, previous))
    return events


def _best(items: list[Rankable]) -> Rankable | None:
    return min(items, key=lambda r: (r.median_ns, r.id)) if items else None


def _event(at: datetime, kind: str, holder: Rankable | None, previous: Rankable | None) -> RecordEvent:
    margin = ratio(previous.median_ns, holder.median_ns) if holder and previous else None
    return RecordEvent(
        at,
        kind,
        holder.id if holder else None,
        previous.id if previous else None,
        holder.median_ns if holder else None,
        margin,
    )
