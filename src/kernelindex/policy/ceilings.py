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

# The buffer sizes the runner's ceiling kernels stream, each above the L2 of every GPU we measure (H200: 50 MB)
# so every byte crosses HBM; the 1 GiB of the single-size sweep the shipped environments measured is one of them.
CEILING_SIZES = (64 << 20, 256 << 20, CEILING_PROBE_BYTES, 4 << 30)
KERNELS = ("copy", "read", "write")


@dataclass(frozen=True)
class CeilingFigure:
    """One ceiling kernel at one buffer size: bytes/s (bytes read + written) a runner measured."""

    kernel: str  # copy | read | write
    bytes: int  # the buffer one call streams
    bandwidth_bytes_per_s: float


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
