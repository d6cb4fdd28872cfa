"""The bandwidth a runner measured for one read/write mix at one size (runner protocol v4, issue 42 item 3): each
ceiling kernel (read-only, copy, write-only) streamed at several sizes, timed as runs are, and the mix of a call
interpolated between them. Both the ceiling check of a run (``policy/ceilings``) and the attainable floor
(``policy/floor``) divide by it, so it sits apart from both."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class CeilingFigure:
    """One ceiling kernel at one buffer size: bytes/s (bytes read + written) a runner measured."""

    kernel: str  # copy | read | write
    bytes: int  # the buffer one call streams
    bandwidth_bytes_per_s: float


COPY_WRITE_SHARE = 0.5  # the copy kernel's bytes are half reads, half writes


def kernel_at_size(figures: Iterable[CeilingFigure], kernel: str, nbytes: int) -> float | None:
    """One kernel's bandwidth at ``nbytes``: linear in log2(size) between the two sizes measured around it,
    the nearest measured size's outside them (None: the kernel was not measured)."""
    points = sorted((f.bytes, f.bandwidth_bytes_per_s) for f in figures if f.kernel == kernel)
    if not points:
        return None
    if nbytes <= points[0][0]:
        return points[0][1]
    for (low, low_bw), (high, high_bw) in zip(points, points[1:], strict=False):
        if nbytes <= high:
            share = (math.log2(nbytes) - math.log2(low)) / (math.log2(high) - math.log2(low))
            return low_bw + (high_bw - low_bw) * share
    return points[-1][1]


def mix_ceiling(figures: Iterable[CeilingFigure], read_bytes: int, write_bytes: int) -> float | None:
    """The bandwidth (bytes read + written per second) measured for this read/write mix at this size: time per
    byte is linear in the share of writes between read-only (0), copy (½) and write-only (1), each kernel taken
    at the call's own size. None: a kernel or the bytes are missing."""
    total = read_bytes + write_bytes
    if total <= 0:
        return None
    listed = list(figures)
    rates = [kernel_at_size(listed, k, total) for k in ("read", "copy", "write")]
    if any(r is None or r <= 0 for r in rates):
        return None
    read, copy, write = (1.0 / r for r in rates if r)
    share = write_bytes / total
    if share <= COPY_WRITE_SHARE:
        per_byte = read + (copy - read) * share / COPY_WRITE_SHARE
    else:
        per_byte = copy + (write - copy) * (share - COPY_WRITE_SHARE) / (1 - COPY_WRITE_SHARE)
    return 1.0 / per_byte
