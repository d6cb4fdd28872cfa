"""Site-wide answers computed once per catalog version for all the workers of a catalog (docs/caching.md): where
such an answer is shared (``place_of``), the waits of a worker for answers another computes (``SharedWaits``),
storing or giving up a claimed one (``share``), and the one warm-up per version (``claim_warming``). The store
is ``catalog/shared_answers.py``; ``web/answer_cache.py`` decides when to claim, wait or compute."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Hashable
from datetime import date, datetime
from typing import Any

from anyio import to_thread

from kernelindex.catalog import shared_answers
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.shared_answers import Place, Stored
from kernelindex.readmodel.requests import HeldRequests
from kernelindex.readmodel.summary_form import summary_form
from kernelindex.web.answer_scope import shared_live

log = logging.getLogger("kernelindex.web")

# A worker that claimed a site-wide answer and stored none after this long (it stopped, or its computation is
# stuck) is taken over by another; shorter than the answer cache's STALE_FOR_S, past which a request computes it.
CLAIM_S = 20.0
SHARED_POLL_S = 0.1  # how often a worker reads the answers it waits for from the shared store (one query for all)


class SharedWaits:
    """The site-wide answers this worker waits for another to compute: one read of the shared store every
    ``SHARED_POLL_S`` answers all of them."""

    def __init__(self) -> None:
        self._waiting: dict[str, dict[Place, asyncio.Future[Stored | None]]] = {}
        self._polls: dict[str, asyncio.Task[None]] = {}

    async def wait(self, catalog: Catalog, place: Place) -> Stored | None:
        """The answer at ``place`` once stored; None when the claim on it lapsed or was given up."""
        waiting = self._waiting.setdefault(catalog.url, {})
        if (future := waiting.get(place)) is None:
            future = waiting[place] = asyncio.get_running_loop().create_future()
        poll = self._polls.get(catalog.url)
        if poll is None or poll.done():
            self._polls[catalog.url] = asyncio.get_running_loop().create_task(self._poll(catalog))
        return await asyncio.shield(future)

    async def _poll(self, catalog: Catalog) -> None:
        waiting = self._waiting[catalog.url]
        while waiting:
            await asyncio.sleep(SHARED_POLL_S)
            places = list(waiting)
            try:
                found = await to_thread.run_sync(shared_answers.answered, catalog, places)
            except Exception:  # the database is away: every waiter computes its answer itself
                log.warning("reading the shared answers failed", exc_info=True)
                found = {}
            now = time.time()
            for place in places:
                got = found.get(place)
                if isinstance(got, Stored) or got is None or now - got >= CLAIM_S:
                    future = waiting.pop(place)
                    if not future.done():
                        future.set_result(got if isinstance(got, Stored) else None)


def place_of(key: Any, path: str, version: int, held: HeldRequests | None, now: datetime) -> Place:
    """Where a site-wide answer is shared: its key, and its stamp in terms every worker of the same code shares
    (the catalog version, what it shows of the live requests, the read model's code fingerprint)."""
    return _digest(key), _digest((version, shared_live(path, now, held), summary_form()))


def claim_warming(catalog: Catalog, state: tuple[int, date]) -> bool:
    """Whether this worker is the first of the catalog's to warm the read models at (catalog version, day)
    (web/warming.py): the site-wide answers they serve are computed once for all workers."""
    version, day = state
    return shared_answers.claim_once(catalog, (_digest(("warm", day.isoformat())), _digest(version)), version)


def _digest(value: Hashable) -> str:
    return hashlib.sha256(repr(value).encode()).hexdigest()


async def share(catalog: Catalog, place: Place, version: int, answer: Stored | None) -> None:
    """Store the answer this worker claimed for the others, or give the claim up when nothing was kept."""
    try:
        if answer is None:
            await to_thread.run_sync(shared_answers.release, catalog, place)
        else:
            await to_thread.run_sync(shared_answers.store, catalog, place, version, answer)
    except Exception:  # a read-only catalog, a database away: the others compute it themselves
        log.warning("sharing an answer failed", exc_info=True)
