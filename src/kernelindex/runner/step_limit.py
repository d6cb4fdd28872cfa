"""A campaign step's time limit ends the case being measured, not the cases already measured.

A device campaign runs each step under ``timeout``, which sends SIGTERM when the step's share of the call
is spent. Without a handler the process dies and every case it finished is lost with it (bench/RESULTS.md,
campaign v8: 508 of 1,800 s of device time). With :class:`StepLimit` installed, SIGTERM during a case
abandons the region of that case being measured; between cases it stops before the next one. The operation's
finished cases, and the regions of the cut case finished before the signal, are then written to their bundle as
usual and the campaign records which cases and regions remain (bench/campaign.py). A signal is handled only
when the main thread runs Python again, and the step is killed outright 15 s after it: so a campaign also
rewrites the bundle after every finished region (runner/session.py), and a kill loses only the region in progress.
"""

from __future__ import annotations

import signal
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


class CampaignCut(BaseException):
    """Raised inside a case when the step's limit arrives. A BaseException, like KeyboardInterrupt, so the
    verifier's ``except Exception`` (a crashing implementation is a result) never records it as a run."""


class StepLimit:
    """Turns SIGTERM into a cut at the next safe point: inside a case, at once; elsewhere (writing a bundle,
    starting the device), at the next case boundary, so a bundle is never left half written."""

    def __init__(self) -> None:
        self.reached = False
        self._in_case = False
        self._installed = False
        self.replaced = 0  # times the handler was found gone at a case boundary (and put back)

    def install(self) -> StepLimit:
        signal.signal(signal.SIGTERM, self._on_signal)
        self._installed = True
        return self

    def reinstall(self) -> None:
        """Put the handler back at every case and region boundary: the cut must not depend on what an implementation's
        import or first call did to the process's signal handlers. A native library that replaces it leaves
        Python's own table unchanged, so the process's caught-signal mask is read too (Linux), and a handler
        found gone is counted in ``replaced``."""
        if not self._installed:
            return
        if signal.getsignal(signal.SIGTERM) != self._on_signal or not sigterm_caught():
            self.replaced += 1
        signal.signal(signal.SIGTERM, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.reached = True
        if self._in_case:
            self._in_case = False  # a second signal while unwinding must not raise again
            raise CampaignCut

    @contextmanager
    def case(self) -> Iterator[None]:
        self.reinstall()
        if self.reached:
            raise CampaignCut
        self._in_case = True
        try:
            yield
        finally:
            self._in_case = False
