"""Whole answers of the catalog's pure reads, kept in the read model's cache.

A route whose endpoint is declared with ``keeps_answers`` (every page view and JSON twin the view
table mounts, unless the view says otherwise, and the few indexes beside them) is a function of the
catalog, the day and the URL alone. Their finished answers (status 200, headers, body) are kept per
(day, path, query) with the version they were computed at, so a repeated read costs one version query
and a copy, not routing, parameter checks, a thread hop, template rendering or JSON encoding
(docs/performance.md).

What an answer is checked against is the scope its route declares (``answer_scope.keeps_answers``; a
view's is ``View.cache``): an operation's answer (its page, its runs' and implementations' pages, their
twins) against that operation's own version and the attainable bandwidths of its GPUs, which move only
when a publication changes that operation or a verified run raises (or a correction lowers) one of those
figures, so publications of other operations leave it kept; a site-wide answer (home, records, search,
GPUs, indexes, compare) against the catalog version; the models index against the day alone.

When that moved, the previous answer is served at once, marked with the version it shows
(``KeptAnswer.updating``), while one background task per worker computes the new one
(stale-while-revalidate): no reader waits for a publication's rebuild. An answer served out of date for
more than ``STALE_FOR_S`` (its computation failed or is stuck) is computed on the request instead.

A site-wide answer is computed again once per catalog version for all the workers of the catalog, not once
per worker: the worker whose background task claims it first (``catalog/shared_answers.py``) computes it and
stores it there; the others' tasks wait for it (one poll of the store per ``SHARED_POLL_S`` for every answer
waited for) and keep the stored copy. A claim not answered within ``CLAIM_S`` is taken over.

``/challenges`` also shows the measurement requests, which change without a catalog version: its
stamp adds what it shows of them (``answer_scope.live_scope``), and a stale answer is served only while
that still holds. An answer that sets a cookie or says ``no-store`` is never kept. A kept answer has an
ETag, so a client revalidating with ``If-None-Match`` gets a 304.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from datetime import datetime
from functools import partial
from typing import Any

from anyio import to_thread

from kernelindex.catalog import shared_answers
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.shared_answers import Place, Stored
from kernelindex.readmodel.cache import READ_CACHE, SITE
from kernelindex.readmodel.errors import NotFound
from kernelindex.readmodel.loading import OperationData, load_operation, loaded_operation
from kernelindex.readmodel.other_dtype import answer_operations
from kernelindex.readmodel.requests import HeldRequests
from kernelindex.readmodel.versions import Versions
from kernelindex.views.table import CacheScope
from kernelindex.web.answer_scope import (
    DAY,
    AnswerPaths,
    kept_route,
    live_scope,
    operation_scope,
    shows_requests,
)
from kernelindex.web.fresh_reads import FreshReads
from kernelindex.web.kept_answers import KeptAnswer, Recorder, Stamp, discard, no_body, send_kept
from kernelindex.web.security import ASGIApp, Receive, Scope, Send
from kernelindex.web.shared_site_answers import CLAIM_S, SharedWaits, place_of, share

log = logging.getLogger("kernelindex.web")

# The longest one answer is served as it was after this worker found it out of date, while one background
# task computes it again; past that (the computation failed, or is stuck) it is computed on the request.
STALE_FOR_S = 30.0
VERSION_FRESH_S = 0.2  # how long the served catalog answers a version read from memory (catalog/db.py)
ANSWERS = "answers"  # their scope in the read model's cache: one entry per key, replaced when recomputed


class AnswerCache:
    """ASGI middleware: answer a GET of a cached route from the read model's cache, or run the app and
    keep its answer. An answer found out of date is served as it was (marked as updating) while one
    background task per worker computes it again: readers never wait on a publication's rebuild."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._refreshing: set[tuple[str, Any]] = set()
        self._tasks: set[asyncio.Task] = set()
        # One background computation at a time per worker for each kind, so an operation's page is not
        # queued behind a site-wide listing
        self._slots = {True: asyncio.Semaphore(1), False: asyncio.Semaphore(1)}
        self._stale_since: dict[tuple[str, Any], float] = {}  # when an answer was first served out of date
        self._paths: AnswerPaths | None = None  # read from the app's routes on the first request
        self._computing: dict[tuple[str, Any, Stamp], asyncio.Future[KeptAnswer | None]] = {}
        self._fresh = FreshReads()
        self._waits = SharedWaits()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._paths is None and scope["type"] == "http":
            self._paths = AnswerPaths(scope["app"].routes)
        declared = self._declared(scope)
        if declared is None:
            await self.app(scope, receive, send)
            return
        state = scope["app"].state
        # The versions (and for /challenges and the feed the requests they show) come from memory; a database
        # read, when one is due, runs off the event loop (web/fresh_reads.py).
        catalog = state.catalog
        # The configured public base URL is part of the key: the feed writes absolute links with it
        key = ("answer", state.clock().date().isoformat(), scope["path"], scope.get("query_string", b""),
               getattr(state, "base_url", None) or os.environ.get("KERNELINDEX_BASE_URL"))
        versions, held = await self._reads(catalog, scope["path"])
        stamp = _stamp_now(catalog, versions, held, scope["path"], state.clock(), declared)  # None: not known unloaded
        kept = READ_CACHE.peek(catalog, key, 0, scope=ANSWERS)
        if isinstance(kept, KeptAnswer):
            if kept.stamp == stamp:
                await send_kept(kept, scope, send)
                return
            if self._may_serve_stale(state, key, kept, stamp):
                await send_kept(kept if stamp is None and _same_version(kept, versions) else kept.updating,
                                 scope, send)
                self._refresh_later(scope, key)
                return
        if stamp is None:
            stamp = await _stamp(catalog, versions, held, scope["path"], state.clock(), declared)
            if isinstance(kept, KeptAnswer) and kept.stamp == stamp:
                await send_kept(kept, scope, send)
                return
        if (computing := self._computing.get((catalog.url, key, stamp))) is not None:
            # Another request computes this very answer: wait for it rather than compute it again
            # (the first request for an answer this worker never kept has no previous one to be given).
            answer = await asyncio.shield(computing)
            if answer is not None:
                await send_kept(answer, scope, send)
                return
        await self._answer_and_keep(scope, receive, send, key, stamp)

    async def _answer_and_keep(self, scope: Scope, receive: Receive, send: Send, key: Any, stamp: Stamp,
                               shared_place: Place | None = None) -> None:
        """Run the app and keep its answer; ``shared_place``: this worker claimed it in the shared store, where it
        goes too (or the claim is given up when there is nothing to keep)."""
        catalog = scope["app"].state.catalog
        marker = (catalog.url, key, stamp)
        waiting = self._computing.get(marker)
        if waiting is None:
            waiting = self._computing[marker] = asyncio.get_running_loop().create_future()

        def complete(recorder: Recorder) -> None:  # the body is whole: before it is sent on
            answer = recorder.answer(stamp) if kept_route(scope.get("route")) else None
            if answer is not None:
                self._keep(catalog, key, answer)
            if not waiting.done():  # the waiters need not wait for this client to read it
                waiting.set_result(answer)

        try:
            await self.app(scope, receive, Recorder(send, complete, stamp).send)
        finally:
            if self._computing.get(marker) is waiting:
                del self._computing[marker]
            if not waiting.done():
                waiting.set_result(None)  # no answer to keep: the waiters compute it themselves
            if shared_place is not None:
                await share(catalog, shared_place, stamp[1], waiting.result())

    def _keep(self, catalog: Catalog, key: Any, answer: KeptAnswer) -> None:
        READ_CACHE.put(catalog, key, answer, version=0, scope=ANSWERS)
        self._stale_since.pop((catalog.url, key), None)

    async def _reads(self, catalog: Catalog, path: str) -> tuple[Versions, HeldRequests | None]:
        """The catalog's versions, and the measurement requests where the answer shows them."""
        versions = await self._fresh.versions(catalog)
        return versions, await self._fresh.requests(catalog) if shows_requests(path) else None

    def _declared(self, scope: Scope) -> CacheScope | None:
        """The cache scope of a GET of a kept route (None: not one)."""
        if scope["type"] != "http" or scope.get("method") != "GET" or self._paths is None:
            return None
        return self._paths.scope(scope["path"])

    def _may_serve_stale(self, state: Any, key: Any, kept: KeptAnswer, stamp: Stamp | None) -> bool:
        """An answer of the same scope (for /challenges: showing the live requests as they are now) that this
        worker first served out of date less than ``stale_for_s`` ago."""
        if state.stale_for_s <= 0 or (stamp is not None and (kept.stamp[0] != stamp[0] or
                                                             (stamp[0] == SITE and kept.stamp[2] != stamp[2]))):
            return False
        since = self._stale_since.setdefault((state.catalog.url, key), time.monotonic())
        return time.monotonic() - since <= state.stale_for_s

    def _refresh_later(self, scope: Scope, key: Any) -> None:
        """Compute the answer for the current version in the background (once per key at a time)."""
        marker = (scope["app"].state.catalog.url, key)
        if marker in self._refreshing:
            return
        self._refreshing.add(marker)
        headers = [(k, v) for k, v in scope.get("headers", []) if k != b"if-none-match"]
        task = asyncio.get_running_loop().create_task(self._refresh({**scope, "headers": headers}, key, marker))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _refresh(self, scope: Scope, key: Any, marker: tuple[str, Any]) -> None:
        try:
            waiting = await self._refresh_once(scope, key)
            if waiting is not None:  # another worker computes it: wait for its answer, not holding the slot
                catalog = scope["app"].state.catalog
                place, stamp = waiting
                stored = await self._waits.wait(catalog, place)
                if stored is not None:
                    self._keep(catalog, key, _kept(stored, stamp))
                else:  # its claim lapsed (or was given up): claim it now, unless another worker did
                    await self._refresh_once(scope, key)
        except Exception:  # the next request computes it instead
            log.warning("computing %s in the background failed", scope["path"], exc_info=True)
        finally:
            self._refreshing.discard(marker)

    async def _refresh_once(self, scope: Scope, key: Any) -> tuple[Place, Stamp] | None:
        """Keep the answer at the current stamp: computed here, or, for a site-wide answer, as another
        worker stored it. Returns where to wait when another worker holds the claim on computing it."""
        declared = self._declared(scope)
        async with self._slots[declared != "operation"]:
            catalog, now = scope["app"].state.catalog, scope["app"].state.clock()
            versions, held = await self._reads(catalog, scope["path"])
            stamp = await _stamp(catalog, versions, held, scope["path"], now, declared)
            kept = READ_CACHE.peek(catalog, key, 0, scope=ANSWERS)
            if isinstance(kept, KeptAnswer) and kept.stamp == stamp:  # what it depends on did not move
                self._stale_since.pop((catalog.url, key), None)
                return None
            place = place_of(key, scope["path"], stamp[1], held, now) if stamp[0] == SITE else None
            if place is not None:
                found = await to_thread.run_sync(partial(shared_answers.obtain, catalog, place, stamp[1],
                                                         stale_after_s=CLAIM_S))
                if isinstance(found, Stored):
                    self._keep(catalog, key, _kept(found, stamp))
                    return None
                if not found.mine:
                    return place, stamp
            await self._answer_and_keep(scope, no_body(), discard, key, stamp, shared_place=place)
            return None


def _kept(stored: Stored, stamp: Stamp) -> KeptAnswer:
    return KeptAnswer(stored.status, stored.headers, stored.body, stored.etag, stamp)


def _stamp_now(catalog: Catalog, versions: Versions, held: HeldRequests | None, path: str, now: datetime,
               declared: CacheScope | None) -> Stamp | None:
    """What a kept answer must have been computed at to be served, when it is known without loading
    anything: None for an operation's answer whose operation this worker does not hold at these versions
    (its GPUs' attainable figures are read from it)."""
    if declared == "day":
        return DAY, 0, ()
    operation = operation_scope(catalog, path) if declared == "operation" else None
    if operation is None:
        return SITE, versions.catalog, live_scope(path, now, held)
    data = loaded_operation(catalog, operation, versions)
    if data is None:
        return None
    return operation, _operation_version(operation, versions), tuple(sorted(data.attainable.items()))


def _operation_version(operation: str, versions: Versions) -> int:
    # An operation page also shows its reviewed "same shape, other dtype" counterparts' evidence.
    return max(versions.of(slug) for slug in answer_operations(operation))


def _same_version(kept: KeptAnswer, versions: Versions) -> bool:
    """Whether an operation's kept answer shows the operation's current version (only its GPUs' attainable
    figures are not known yet: they seldom move, and it is not marked as updating)."""
    return kept.stamp[0] != SITE and kept.stamp[1] == _operation_version(kept.stamp[0], versions)


async def _stamp(catalog: Catalog, versions: Versions, held: HeldRequests | None, path: str, now: datetime,
                 declared: CacheScope | None) -> Stamp:
    """The stamp, loading the operation (in one thread for every request that asks meanwhile) when needed."""
    if (known := _stamp_now(catalog, versions, held, path, now, declared)) is not None:
        return known
    operation = operation_scope(catalog, path)
    assert operation is not None
    try:
        data = await _load_once(catalog, operation, versions)
    except NotFound:  # a page that answers 404: kept by the operation's version alone
        return operation, _operation_version(operation, versions), ()
    return operation, _operation_version(operation, versions), tuple(sorted(data.attainable.items()))


_LOADING: dict[tuple[str, str, int, int], asyncio.Future[OperationData]] = {}


async def _load_once(catalog: Catalog, operation: str, versions: Versions) -> OperationData:
    """Load the operation in one thread however many requests ask for it meanwhile: after a publication of
    it, each would otherwise hold a thread-pool slot waiting on the same load, and the routes that need
    a thread would queue behind them."""
    key = (catalog.url, operation, versions.of(operation), versions.attainable)
    if (pending := _LOADING.get(key)) is None:
        pending = _LOADING[key] = asyncio.ensure_future(to_thread.run_sync(load_operation, catalog, operation))
        pending.add_done_callback(lambda _: _LOADING.pop(key, None))
    return await asyncio.shield(pending)
