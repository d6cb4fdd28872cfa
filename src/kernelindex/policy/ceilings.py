"""Which measured bandwidth the attainable floor divides by (issue 20 item 1): the maximum over the
runner's ceiling kernels — copy, read-only, write-only — at several buffer sizes, and over the rate every
verified run on the GPU moved its compulsory bytes at. One bus carries reads and writes, so the fastest
stream of any kind bounds every mix; a size where the stream runs fastest (launch and tail costs amortised,
no cache help past the L2) is as much a measurement of the GPU as any other, so sizes are maximised over too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kernelindex.policy.floor import CEILING_PROBE_BYTES, Attainable, Ceilings
from kernelindex.policy.mix_ceiling import COPY_WRITE_SHARE, CeilingFigure, kernel_at_size, mix_ceiling

__all__ = ["COPY_WRITE_SHARE", "CeilingFigure", "kernel_at_size", "mix_ceiling"]  # kept importable from here

# The buffer sizes the runner's ceiling kernels stream, each above the L2 of every GPU we measure (H200: 50 MB)
# so every byte crosses HBM; the 1 GiB of the single-size sweep the shipped environments measured is one of them.
CEILING_SIZES = (64 << 20, 256 << 20, CEILING_PROBE_BYTES, 4 << 30)
KERNELS = ("copy", "read", "write")


def ceilings_over_sizes(figures: Iterable[CeilingFigure]) -> Ceilings | None:
    """Per kernel, the best over every size measured (None without a copy figure: the environment's
    ceilings start from the copy)."""
    best: dict[str, float] = {}
    for f in figures:
        if f.kernel not in KERNELS:
            raise ValueError(f"unknown ceiling kernel {f.kernel!r}; one of {', '.join(KERNELS)}")
        if f.bandwidth_bytes_per_s > best.get(f.kernel, 0.0):
            best[f.kernel] = f.bandwidth_bytes_per_s
    if "copy" not in best:
        return None
    return Ceilings(best["copy"], best.get("read"), best.get("write"))


def best_sizes(figures: Iterable[CeilingFigure]) -> dict[str, int]:
    """Per kernel, the buffer size its best figure was streamed at (the first of equal figures)."""
    best: dict[str, CeilingFigure] = {}
    for f in figures:
        if f.kernel not in best or f.bandwidth_bytes_per_s > best[f.kernel].bandwidth_bytes_per_s:
            best[f.kernel] = f
    return {kernel: f.bytes for kernel, f in best.items()}


def best_seen(candidates: Iterable[Attainable]) -> Attainable | None:
    """The attainable bandwidth: the candidate with the highest rate — ceilings of every environment and
    each verified run's rate; the first named wins a tie. None: nothing measured."""
    best: Attainable | None = None
    for candidate in candidates:
        rate = candidate.bandwidth_bytes_per_s
        if rate > 0 and (best is None or rate > best.bandwidth_bytes_per_s):
            best = candidate
    return best


# Runner v4 (issue 42 item 3): a memory-bound run is held to the ceiling measured for its own read/write mix at its
# own size, timed as runs are (runner/stream_ceilings.py). One whose implied bandwidth exceeds that by more than
# this is flagged: it is not a record until its page explains it.
CEILING_TOLERANCE = 0.03
@dataclass(frozen=True)
class CeilingCheck:
    """A run's implied bandwidth (its compulsory bytes over its time) against the ceiling of its mix and size."""

    implied_bytes_per_s: float
    ceiling_bytes_per_s: float
    read_bytes: int
    write_bytes: int

    @property
    def ratio(self) -> float:
        return self.implied_bytes_per_s / self.ceiling_bytes_per_s

    @property
    def exceeds(self) -> bool:
        return self.ratio > 1 + CEILING_TOLERANCE


def ceiling_check(figures: Iterable[CeilingFigure], read_bytes: int, write_bytes: int,
                  time_ns: float) -> CeilingCheck | None:
    """The check of one run (None: no ceiling table, no bytes or no time)."""
    ceiling = mix_ceiling(figures, read_bytes, write_bytes)
    if ceiling is None or time_ns <= 0:
        return None
    implied = (read_bytes + write_bytes) / (time_ns * 1e-9)
    return CeilingCheck(implied, ceiling, read_bytes, write_bytes)
