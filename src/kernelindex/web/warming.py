"""Keeping a server's read models warm. Every write bumps the catalog version, which empties the read
model's cache; without this, the first visitor after a publication (or after midnight, when
staleness moves) pays for loading every operation (about a second on the full catalog). A worker's
background thread notices the new version and computes the home page's model, as at start-up.

A burst of publications (an import publishes in several transactions) is warmed once: a new version
is warmed only after it has stayed the same for one polling interval. After its first warm-up a worker
warms a new version only when it is the first worker of the catalog to claim it (``claim``): the
site-wide answers are computed once for all workers (web/answer_cache.py), so the others need not hold
the new version's models.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import date

log = logging.getLogger("kernelindex.web")

POLL_S = 2.0


def keep_warm(version: Callable[[], int], today: Callable[[], date], warm: Callable[[], None],
              stop: threading.Event, poll_s: float | None = None,
              claim: Callable[[tuple[int, date]], bool] | None = None) -> None:
    """Warm now, then whenever (catalog version, day) changes and has stayed so for ``poll_s`` (and
    ``claim`` of it, when given, says this worker is the one to warm it), until ``stop`` is set. Failures
    are logged and retried on the next change: warming is an optimisation, and pages compute on request
    without it."""
    poll_s = POLL_S if poll_s is None else poll_s
    warmed: tuple[int, date] | None = None
    seen: tuple[int, date] | None = None
    while not stop.is_set():
        try:
            state = (version(), today())
        except Exception:  # the database may be restarting: pages report that themselves
            log.warning("could not read the catalog version to keep the read models warm", exc_info=True)
            state = None
        if state is not None and state != warmed and (warmed is None or state == seen):
            first, warmed = warmed is None, state
            if first or claim is None or _claimed(claim, state):
                _warm_once(warm, state)
        seen = state
        stop.wait(poll_s)


def _claimed(claim: Callable[[tuple[int, date]], bool], state: tuple[int, date]) -> bool:
    try:
        return claim(state)
    except Exception:  # a catalog that cannot be written to: warm here, as every worker did
        log.warning("could not claim warming catalog version %s", state[0], exc_info=True)
        return True


def _warm_once(warm: Callable[[], None], state: tuple[int, date]) -> None:
    started = time.perf_counter()
    try:
        warm()
    except Exception:
        log.exception("warming the read models failed; pages will compute on first request")
        return
    log.info("read models warmed for catalog version %s in %.1f s", state[0], time.perf_counter() - started)
