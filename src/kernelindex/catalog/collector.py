"""Pausing Python's cyclic garbage collector around bulk work: imports, publications, whole-catalog loads and the
summary pass. They build and hold ~10^5–10^6 containers (manifests, rows, runs) that form no reference cycles, and
each automatic collection walks all of them again to find no garbage (13% of an import's CPU, a quarter of the
summary pass's: docs/performance.md). Reference counting frees them as always."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class _Pauses:
    running: int = 0  # pauses in progress
    resume: bool = False  # whether the collector ran before the first of them
    lock: threading.Lock = field(default_factory=threading.Lock)


_PAUSES = _Pauses()


@contextmanager
def collector_paused() -> Iterator[None]:
    """The collector paused until the last pause in progress ends; it then resumes if it was running before
    the first (threads may pause at once: a count, not a flag)."""
    with _PAUSES.lock:
        if _PAUSES.running == 0:
            _PAUSES.resume = gc.isenabled()
            gc.disable()
        _PAUSES.running += 1
    try:
        yield
    finally:
        with _PAUSES.lock:
            _PAUSES.running -= 1
            if _PAUSES.running == 0 and _PAUSES.resume:
                gc.enable()
