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
import hashlib
import logging
import os
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, replace
from datetime import date, datetime
from functools import cached_property, partial
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
from kernelindex.readmodel.summary_form import summary_form
from kernelindex.readmodel.versions import Versions
from kernelindex.views.table import CacheScope
from kernelindex.web.answer_scope import (
    DAY,
    AnswerPaths,
    kept_route,
    live_scope,
    operation_scope,
    shared_live,
    shows_requests,
)
from kernelindex.web.fresh_reads import FreshReads
from kernelindex.web.security import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("kernelindex.web")

MAX_KEPT_BYTES = 8 * 1024 * 1024  # one answer; bigger ones (none today) are answered but not kept
# The longest one answer is served as it was after this worker found it out of date, while one background
# task computes it again; past that (the computation failed, or is stuck) it is computed on the request.
STALE_FOR_S = 30.0
# A worker that claimed a site-wide answer and stored none after this long (it stopped, or its computation is
# stuck) is taken over by another; shorter than STALE_FOR_S, past which a request computes the answer itself.
CLAIM_S = 20.0
SHARED_POLL_S = 0.1  # how often a worker reads the answers it waits for from the shared store (one query for all)
VERSION_FRESH_S = 0.2  # how long the served catalog answers a version read from memory (catalog/db.py)
ANSWERS = "answers"  # their scope in the read model's cache: one entry per key, replaced when recomputed
# (operation slug, its version, its GPUs' attainable bandwidths) or (SITE, catalog version, what it shows live)
Stamp = tuple[str, int, Hashable]
VERSION_HEADER = b"x-kernelindex-version"  # the version an answer shows: its operation's, or the catalog's
UPDATING_HEADER = b"x-kernelindex-updating"  # on an out-of-date answer: the version being computed
_MAIN = b'<main id="content" tabindex="-1">'


@dataclass(frozen=True)
class KeptAnswer:
    status: int
    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes
    etag: bytes
    stamp: Stamp

    @property
    def nbytes(self) -> int:
        """What the cache counts against its byte budget."""
        return len(self.body)

    @cached_property
    def updating(self) -> KeptAnswer:
        """This answer as served while a newer one is computed: marked with the version it shows (the JSON
        gains ``"updating": {"shows_version": N}``, the page a line saying it is being updated) and its
        own ETag, so a client does not keep it as the newer answer."""
        body = self.body
        shown = self.stamp[1]
        if body.startswith(b"{") and _header(self.headers, b"content-type").startswith(b"application/json"):
            body = b'{"updating":{"shows_version":%d},' % shown + body[1:] if body != b"{}" else body
        elif _MAIN in body:
            note = (b'<p class="updating" role="status">Updating: this page shows the catalog as of version %d; '
                    b'a newer version is being computed. Reload in a few seconds.</p>' % shown)
            body = body.replace(_MAIN, _MAIN + note, 1)
        etag = self.etag[:-1] + b'-updating"'
        headers = tuple((k, str(len(body)).encode() if k == b"content-length" else etag if k == b"etag" else v)
                        for k, v in self.headers)
        return replace(self, headers=(*headers, (UPDATING_HEADER, b"1")), body=body, etag=etag)


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
        self._waits = _SharedWaits()

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
                await _send_kept(kept, scope, send)
                return
            if self._may_serve_stale(state, key, kept, stamp):
                await _send_kept(kept if stamp is None and _same_version(kept, versions) else kept.updating,
                                 scope, send)
                self._refresh_later(scope, key)
                return
        if stamp is None:
            stamp = await _stamp(catalog, versions, held, scope["path"], state.clock(), declared)
            if isinstance(kept, KeptAnswer) and kept.stamp == stamp:
                await _send_kept(kept, scope, send)
                return
        if (computing := self._computing.get((catalog.url, key, stamp))) is not None:
            # Another request computes this very answer: wait for it rather than compute it again
            # (the first request for an answer this worker never kept has no previous one to be given).
            answer = await asyncio.shield(computing)
            if answer is not None:
                await _send_kept(answer, scope, send)
                return
        await self._answer_and_keep(scope, receive, send, key, stamp)

    async def _answer_and_keep(self, scope: Scope, receive: Receive, send: Send, key: Any, stamp: Stamp,
                               share: Place | None = None) -> None:
        """Run the app and keep its answer; ``share``: this worker claimed it in the shared store, where it
        goes too (or the claim is given up when there is nothing to keep)."""
        catalog = scope["app"].state.catalog
        marker = (catalog.url, key, stamp)
        waiting = self._computing.get(marker)
        if waiting is None:
            waiting = self._computing[marker] = asyncio.get_running_loop().create_future()

        def complete(recorder: _Recorder) -> None:  # the body is whole: before it is sent on
            answer = recorder.answer(stamp) if kept_route(scope.get("route")) else None
            if answer is not None:
                self._keep(catalog, key, answer)
            if not waiting.done():  # the waiters need not wait for this client to read it
                waiting.set_result(answer)

        try:
            await self.app(scope, receive, _Recorder(send, complete, stamp).send)
        finally:
            if self._computing.get(marker) is waiting:
                del self._computing[marker]
            if not waiting.done():
                waiting.set_result(None)  # no answer to keep: the waiters compute it themselves
            if share is not None:
                await _share(catalog, share, stamp[1], waiting.result())

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
            place = _place(key, scope["path"], stamp, held, now) if stamp[0] == SITE else None
            if place is not None:
                found = await to_thread.run_sync(partial(shared_answers.obtain, catalog, place, stamp[1],
                                                         stale_after_s=CLAIM_S))
                if isinstance(found, Stored):
                    self._keep(catalog, key, _kept(found, stamp))
                    return None
                if not found.mine:
                    return place, stamp
            await self._answer_and_keep(scope, _no_body(), _discard, key, stamp, share=place)
            return None


class _SharedWaits:
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


def _place(key: Any, path: str, stamp: Stamp, held: HeldRequests | None, now: datetime) -> Place:
    """Where a site-wide answer is shared: its key, and its stamp in terms every worker of the same code shares
    (the catalog version, what it shows of the live requests, the read model's code fingerprint)."""
    return _digest(key), _digest((stamp[1], shared_live(path, now, held), summary_form()))


def claim_warming(catalog: Catalog, state: tuple[int, date]) -> bool:
    """Whether this worker is the first of the catalog's to warm the read models at (catalog version, day)
    (web/warming.py): the site-wide answers they serve are computed once for all workers."""
    version, day = state
    return shared_answers.claim_once(catalog, (_digest(("warm", day.isoformat())), _digest(version)), version)


def _digest(value: Hashable) -> str:
    return hashlib.sha256(repr(value).encode()).hexdigest()


def _kept(stored: Stored, stamp: Stamp) -> KeptAnswer:
    return KeptAnswer(stored.status, stored.headers, stored.body, stored.etag, stamp)


async def _share(catalog: Catalog, place: Place, version: int, answer: KeptAnswer | None) -> None:
    """Store the answer this worker claimed for the others, or give the claim up when nothing was kept."""
    try:
        if answer is None:
            await to_thread.run_sync(shared_answers.release, catalog, place)
        else:
            stored = Stored(answer.status, answer.headers, answer.body, answer.etag)
            await to_thread.run_sync(shared_answers.store, catalog, place, version, stored)
    except Exception:  # a read-only catalog, a database away: the others compute it themselves
        log.warning("sharing an answer failed", exc_info=True)


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


def _no_body() -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()  # nobody disconnects from a background computation
        return {"type": "http.disconnect"}

    return receive


async def _discard(message: Message) -> None:
    return None


class _Recorder:
    """Passes an answer through while keeping a copy, if it is one that may be kept."""

    def __init__(self, send: Send, complete: Callable[[_Recorder], None] | None = None,
                 stamp: Stamp | None = None) -> None:
        self._send = send
        self._stamp = stamp  # the version the answer shows goes in its headers
        self._complete = complete  # called once the last body part is in, before it is sent on
        self._start: Message | None = None
        self._body: list[bytes] = []
        self._size = 0
        self._keepable = True

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            if self._stamp is not None and message["status"] == 200:
                message = {**message, "headers": [*message.get("headers", []),
                                                  (VERSION_HEADER, str(self._stamp[1]).encode())]}
            self._start = message
            self._keepable = message["status"] == 200 and not _forbids_keeping(message.get("headers", []))
        elif message["type"] == "http.response.body" and self._keepable:
            self._size += len(message.get("body", b""))
            self._keepable = self._size <= MAX_KEPT_BYTES
            self._body.append(message.get("body", b""))
        if message["type"] == "http.response.body" and not message.get("more_body") and self._complete:
            self._complete(self)
        await self._send(message)

    def answer(self, stamp: Stamp) -> KeptAnswer | None:
        if self._start is None or not self._keepable:
            return None
        body = b"".join(self._body)
        headers = [(k.lower(), v) for k, v in self._start.get("headers", [])]
        etag = next((v for k, v in headers if k == b"etag"), None)
        if etag is None:
            etag = b'W/"' + hashlib.sha256(body).hexdigest()[:20].encode() + b'"'
            headers.append((b"etag", etag))
        return KeptAnswer(200, tuple(headers), body, etag, stamp)


def _header(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> bytes:
    return next((v for k, v in headers if k == name), b"")


def _forbids_keeping(headers: Any) -> bool:
    for name, value in headers:
        name = name.lower()
        if name == b"set-cookie" or (name == b"cache-control" and b"no-store" in value):
            return True
    return False


async def _send_kept(kept: KeptAnswer, scope: Scope, send: Send) -> None:
    if kept.etag in _if_none_match(scope):
        await send({"type": "http.response.start", "status": 304, "headers": [(b"etag", kept.etag)]})
        await send({"type": "http.response.body", "body": b""})
        return
    await send({"type": "http.response.start", "status": kept.status, "headers": list(kept.headers)})
    await send({"type": "http.response.body", "body": kept.body})


def _if_none_match(scope: Scope) -> set[bytes]:
    for name, value in scope.get("headers", []):
        if name == b"if-none-match":
            return {tag.strip() for tag in value.split(b",") if tag.strip()}
    return set()
