"""A campaign step's time limit ends the case being measured, not the cases already measured.

A device campaign runs each step under ``timeout``, which sends SIGTERM when the step's share of the call
is spent. Without a handler the process dies and every case it finished is lost with it (the ledger of
campaign v8: 508 of 1,800 s of device time). With :class:`StepLimit` installed, SIGTERM during a case
abandons the region of that case being measured; between cases it stops before the next one. The operation's
finished cases, and the regions of the cut case finished before the signal, are then written to their bundle as
usual and the campaign records which cases and regions remain (campaigns/measure.py). A signal is handled only
when the main thread runs Python again, and the step is killed outright 15 s after it: so a campaign also
rewrites the bundle after every finished region (runner/session.py), and a kill loses only the region in progress.

A signal can be lost: a native library may set SIGTERM back to its default action, and the step then dies of it
(rc 143, twice on the H200 in fused-moe under torch.compile, with nothing kept of the region in progress). So a
step can also carry a deadline that needs no signal: :meth:`StepLimit.check` is called at safe points inside a
region (between sample batches and between phases) and cuts the case there once the deadline has passed. The
deadline is the step's cut; SIGTERM stays the backstop.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType


def sigterm_caught(status: Path = Path("/proc/self/status")) -> bool:
    """Whether the process catches SIGTERM (bit 15 of ``SigCgt``); True where that cannot be read."""
    try:
        for line in status.read_text().splitlines():
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    except (OSError, ValueError, IndexError):
        pass
    return True


def process_age_s(stat: Path = Path("/proc/self/stat")) -> float:
    """Seconds since this process started (Linux: its start time in ``stat``, on the boot-time clock); 0 where
    that cannot be read, so a deadline then counts from the caller's call instead."""
    try:
        started = int(stat.read_text().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started)
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0


def deadline_after_start(seconds: float) -> float:
    """The ``time.monotonic()`` reading ``seconds`` after this process started. Counted from the process's start,
    not from when Python got here, so it shares its origin with the ``timeout`` that started the process."""
    return time.monotonic() + seconds - process_age_s()


class CampaignCut(BaseException):
    """Raised inside a case when the step's limit arrives. A BaseException, like KeyboardInterrupt, so the
    verifier's ``except Exception`` (a crashing implementation is a result) never records it as a run."""


class StepLimit:
    """Turns SIGTERM into a cut at the next safe point: inside a case, at once; elsewhere (writing a bundle,
    starting the device), at the next case boundary, so a bundle is never left half written. With ``deadline``
    (a ``time.monotonic()`` reading), a case in progress is also cut at the first :meth:`check` after it."""

    def __init__(self, deadline: float | None = None) -> None:
        self.deadline = deadline
        self.reached = False
        self.cut_by = ""  # what reached the limit: "SIGTERM" or "the deadline"
        self.cut_at = ""  # the safe point a deadline cut the case at
        self._in_case = False
        self._installed = False
        self.replaced = 0  # times the handler was found gone at a safe point (and put back)
        self.lost_at = ""  # the safe point where it was last found gone

    def install(self) -> StepLimit:
        signal.signal(signal.SIGTERM, self._on_signal)
        self._installed = True
        return self

    def reinstall(self, where: str = "") -> None:
        """Put the handler back at every case and region boundary: the cut must not depend on what an implementation's
        import or first call did to the process's signal handlers. A native library that replaces it leaves
        Python's own table unchanged, so the process's caught-signal mask is read too (Linux), and a handler
        found gone is counted in ``replaced`` (``where``: in ``lost_at``)."""
        if not self._installed:
            return
        if signal.getsignal(signal.SIGTERM) != self._on_signal or not sigterm_caught():
            self.replaced += 1
            self.lost_at = where
        signal.signal(signal.SIGTERM, self._on_signal)

    def check(self, where: str = "") -> None:
        """A safe point inside a case (between sample batches, between a region's phases): the handler is put back
        if it was found gone, and the case is cut here once the deadline has passed. Cheap enough for every batch:
        one read of /proc/self/status."""
        self.reinstall(where)
        if self._due() and self._in_case:
            self._in_case = False
            self.cut_at = where
            raise CampaignCut

    def _due(self) -> bool:
        if not self.reached and self.deadline is not None and time.monotonic() >= self.deadline:
            self.reached, self.cut_by = True, "the deadline"
        return self.reached

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.reached = True
        self.cut_by = self.cut_by or "SIGTERM"
        if self._in_case:
            self._in_case = False  # a second signal while unwinding must not raise again
            raise CampaignCut

    @contextmanager
    def case(self) -> Iterator[None]:
        self.reinstall("case start")
        if self._due():
            raise CampaignCut
        self._in_case = True
        try:
            yield
        finally:
            self._in_case = False
