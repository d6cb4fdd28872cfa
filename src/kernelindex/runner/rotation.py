"""Runner protocol v4's stream time, the arithmetic (pure: no torch, tested on the CPU).

A call's stream time is what it costs a stream of calls like it: K calls back to back, each on its own
input/output set, captured in one CUDA graph and replayed whole; per call = replay time / K. The sets rotate
(call i uses set i mod R) and R sets together hold at least ``COLD_FACTOR`` × the GPU's L2, so every call starts
with its own tensors evicted by the calls between, and the write-back of each call's outputs is paid inside the
replay, by the calls after it. A call whose own tensors already exceed that footprint has R = 1. K is a multiple
of R and at least ``MIN_CALLS_PER_REPLAY``, so the two events around a replay add under a percent of a call of a
few µs (docs/runner.md, "Stream time").
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

COLD_FACTOR = 4  # the R sets together hold at least 4 × L2
MIN_CALLS_PER_REPLAY = 32
# Calls of a few KiB would need tens of thousands of sets; past this the replay still evicts each set (the other
# sets' traffic exceeds the L2 whenever footprint × sets does), and the run records the sets and the footprint.
MAX_ROTATION_SETS = 4096
MEMORY_SHARE = 0.5  # the sets may take at most half the free device memory


@dataclass(frozen=True)
class Rotation:
    sets: int  # R: distinct input/output sets, used in turn
    calls_per_replay: int  # K: calls in one replay, a multiple of R
    footprint_bytes: int  # one call's own tensors: its inputs and what it returns
    l2_bytes: int

    @property
    def rotated_bytes(self) -> int:
        """What the R sets hold together: the traffic between two uses of one set."""
        return self.sets * self.footprint_bytes

    @property
    def cold(self) -> bool:
        """Whether a set is touched again only after ``COLD_FACTOR`` × L2 of other traffic (or is that big)."""
        return self.rotated_bytes >= COLD_FACTOR * self.l2_bytes


def rotation(footprint_bytes: int, l2_bytes: int, free_bytes: int | None = None) -> Rotation:
    """How many sets a call with this footprint rotates over, and how many calls one replay holds."""
    footprint = max(1, int(footprint_bytes))
    target = COLD_FACTOR * max(0, int(l2_bytes))
    sets = 1 if footprint >= target else math.ceil(target / footprint)
    sets = min(sets, MAX_ROTATION_SETS)
    if free_bytes is not None:
        sets = max(1, min(sets, int(free_bytes * MEMORY_SHARE) // footprint))
    calls = sets * math.ceil(MIN_CALLS_PER_REPLAY / sets)
    return Rotation(sets=sets, calls_per_replay=calls, footprint_bytes=footprint, l2_bytes=max(0, int(l2_bytes)))


def per_call_ns(replay_ns: float, calls_per_replay: int) -> float:
    """One replay's time per call."""
    if calls_per_replay < 1:
        raise ValueError(f"a replay holds at least one call, not {calls_per_replay}")
    return replay_ns / calls_per_replay


def set_of_call(index: int, sets: int) -> int:
    """Which input/output set call ``index`` of a replay uses."""
    return index % sets


def run_rotated(calls: Sequence[Callable[[], object]], rotation: Rotation) -> None:
    """K calls over the sets in turn, keeping the last R results alive (so outputs rotate too)."""
    kept: deque[object] = deque(maxlen=rotation.sets)
    for i in range(rotation.calls_per_replay):
        kept.append(calls[set_of_call(i, rotation.sets)]())
