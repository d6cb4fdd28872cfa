"""The two reads the answer cache makes on every request, kept off the event loop.

A kept answer is checked against the catalog's versions and, for ``/challenges`` and the feed, the
measurement requests it shows. Both are answered from memory and read again every ``version_fresh_s``
(catalog/db.py, readmodel/requests.py). That read is a database round trip (a pooled connection's
ping, the query, its rollback): made inline it stopped the worker's event loop, and every request it
held, for as long as the round trip took. While a publication wrote and the other worker recomputed
answers, that was tens of milliseconds a read, most of what p99 measured on PostgreSQL
(docs/performance.md).

Here such a read runs on one dedicated thread per process, once however many requests ask meanwhile.
A value older than its window but younger than ``SERVE_AGED_S`` is answered at once while the read
runs (another process's publication shows within that long, plus one round trip); a request waits for
the read only when there is nothing to answer from: the first request, or after this process's own
write (it then sees its write, as before), or when reads stopped succeeding.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.requests import writes_here
from kernelindex.readmodel.requests import HeldRequests, held_requests, known_held_requests
from kernelindex.readmodel.versions import VERSIONS, Versions

log = logging.getLogger("kernelindex.web")

SERVE_AGED_S = 2.0  # past this a read is waited for: a database that stopped answering is not hidden for long
_READS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kernelindex-fresh-reads")


def settled(timeout_s: float = 10.0) -> None:
    """Wait until every read queued so far has run (the one reads' thread takes them in order)."""
    _READS.submit(lambda: None).result(timeout_s)
Value = TypeVar("Value")
ReadKey = tuple[str, str, int]  # what is read, of which catalog, after how many of this process's writes


class FreshReads:
    """The catalog's versions and the held measurement requests, for requests on one event loop."""

    def __init__(self) -> None:
        self._pending: dict[ReadKey, asyncio.Future[Any]] = {}

    async def versions(self, catalog: Catalog) -> Versions:
        """The catalog's versions (read on the reads' thread when there is nothing fresh enough to answer)."""
        key = ("versions", catalog.url, catalog.writes)
        known = catalog.known_version()
        versions = VERSIONS.known(catalog, known[0]) if known is not None else None
        if known is not None and versions is not None and known[1] < SERVE_AGED_S:
            if known[1] >= catalog.version_fresh_s:
                self._read(key, VERSIONS.current, catalog)
            return versions
        return await asyncio.shield(self._read(key, VERSIONS.current, catalog))

    async def requests(self, catalog: Catalog) -> HeldRequests:
        """The measurement requests as ``held_requests`` holds them, read the same way."""
        key = ("requests", catalog.url, writes_here(catalog))
        known = known_held_requests(catalog) if catalog.version_fresh_s > 0 else None  # 0: every request reads
        if known is not None and known[1] < SERVE_AGED_S:
            if known[1] >= catalog.version_fresh_s:
                self._read(key, held_requests, catalog)
            return known[0]
        return await asyncio.shield(self._read(key, held_requests, catalog))

    def _read(self, key: ReadKey, read: Callable[[Catalog], Value], catalog: Catalog) -> asyncio.Future[Value]:
        """The read under way for ``key``, or a new one on the reads' thread."""
        pending = self._pending.get(key)
        if pending is None:
            pending = asyncio.get_running_loop().run_in_executor(_READS, read, catalog)
            self._pending[key] = pending
            pending.add_done_callback(lambda done: self._finished(key, done))
        return pending

    def _finished(self, key: ReadKey, done: asyncio.Future[Any]) -> None:
        if self._pending.get(key) is done:
            del self._pending[key]
        if not done.cancelled() and (error := done.exception()) is not None:  # a waiting request raises it too
            log.warning("reading %s failed: %s", key[0], error)
