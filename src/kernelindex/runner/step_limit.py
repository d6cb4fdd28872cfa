"""A campaign step's time limit ends the case being measured, not the cases already measured.

A device campaign runs each step under ``timeout``, which sends SIGTERM when the step's share of the call
is spent. Without a handler the process dies and every case it finished is lost with it (bench/RESULTS.md,
campaign v8: 508 of 1,800 s of device time). With :class:`StepLimit` installed, SIGTERM during a case
abandons that case only; between cases it stops before the next one. The operation's finished cases are then
written to their bundle as usual and the campaign records which cases remain (bench/campaign.py).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class CampaignCut(BaseException):
    """Raised inside a case when the step's limit arrives. A BaseException, like KeyboardInterrupt, so the
    verifier's ``except Exception`` (a crashing implementation is a result) never records it as a run."""


class StepLimit:
    """Turns SIGTERM into a cut at the next safe point: inside a case, at once; elsewhere (writing a bundle,
    starting the device), at the next case boundary, so a bundle is never left half written."""

    def __init__(self) -> None:
        self.reached = False
        self._in_case = False

    def install(self) -> StepLimit:
        signal.signal(signal.SIGTERM, self._on_signal)
        return self

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.reached = True
        if self._in_case:
            self._in_case = False  # a second signal while unwinding must not raise again
            raise CampaignCut

    @contextmanager
    def case(self) -> Iterator[None]:
        if self.reached:
            raise CampaignCut
        self._in_case = True
        try:
            yield
        finally:
            self._in_case = False
