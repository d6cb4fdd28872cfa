"""Runner protocol v3: a call's device time from a CUPTI activity trace. Pure Python (no torch), so
the rules are testable with fake traces.

A trace is a list of ``TraceEvent``: host events (the timed calls' annotation ranges, the CUDA runtime
calls made inside them) and device activities (kernels, memcpys, memsets; the profiler's own GPU-side
copies of the annotations and sync markers are not activities of the call). A device activity belongs
to the timed call whose host range contains the runtime call that launched it (matched by correlation
id), so a flush launched before the range is never inside the figure, whatever stream runs what.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

CALL_PREFIX = "kernelindex_timed_call_"
# Runtime/driver calls that make the host wait for the device.
SYNC_CALLS = frozenset({
    "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy", "cudaMemcpy2D",
    "cudaMemcpyPeer", "cudaMemset", "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize",
    "cuMemcpyDtoH_v2", "cuMemcpy",
})
# GPU-side markers some profilers emit for syncs: not work of the call.
DEVICE_MARKERS = frozenset({"Stream Sync", "Context Sync", "Event Sync", "Stream Wait Event"})


@dataclass(frozen=True)
class TraceEvent:
    name: str
    on_device: bool
    start_ns: int
    end_ns: int
    correlation: int = 0
    annotation: bool = False  # a user range (record_function), on the host or its GPU-side copy


@dataclass
class CallActivity:
    """What one timed call did on the device, from the trace."""

    intervals: list[tuple[int, int]] = field(default_factory=list)
    syncs: int = 0
    device_to_host_copies: int = 0

    @property
    def device_ns(self) -> int:
        return union_ns(self.intervals)

    @property
    def span_ns(self) -> int:
        if not self.intervals:
            return 0
        return max(end for _, end in self.intervals) - min(start for start, _ in self.intervals)


def union_ns(intervals: Sequence[tuple[int, int]]) -> int:
    """Total length of the union of [start, end) intervals: overlap on several streams counts once."""
    total, current_start, current_end = 0, None, None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_end is not None and current_start is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None and current_start is not None:
        total += current_end - current_start
    return total


def _is_activity(event: TraceEvent) -> bool:
    return event.on_device and not event.annotation and event.name not in DEVICE_MARKERS


def _call_ranges(events: Sequence[TraceEvent]) -> list[tuple[int, int, int]]:
    ranges = [(e.start_ns, e.end_ns, int(e.name[len(CALL_PREFIX):])) for e in events
              if not e.on_device and e.name.startswith(CALL_PREFIX)]
    return sorted(ranges)


def _call_at(ranges: list[tuple[int, int, int]], starts: list[int], t: int) -> int | None:
    i = bisect.bisect_right(starts, t) - 1
    if i >= 0 and ranges[i][0] <= t <= ranges[i][1]:
        return ranges[i][2]
    return None


def calls_from_trace(events: Sequence[TraceEvent], calls: int) -> list[CallActivity]:
    """Each timed call's device activity, syncs and device-to-host copies, in call order."""
    ranges = _call_ranges(events)
    starts = [r[0] for r in ranges]
    out = [CallActivity() for _ in range(calls)]
    launched_at = {e.correlation: e.start_ns for e in events
                   if not e.on_device and not e.annotation and e.correlation}
    for e in events:
        if _is_activity(e):
            launch = launched_at.get(e.correlation)
            index = None if launch is None else _call_at(ranges, starts, launch)
            if index is not None and index < calls:
                out[index].intervals.append((e.start_ns, e.end_ns))
                if "DtoH" in e.name:
                    out[index].device_to_host_copies += 1
        elif not e.on_device and e.name in SYNC_CALLS:
            index = _call_at(ranges, starts, e.start_ns)
            if index is not None and index < calls:
                out[index].syncs += 1
    return out
