"""The read model's one cache. Every answer is a pure function of the catalog (and of the day, for
staleness), so values are kept per (catalog, catalog version, key): any write bumps the version and
makes every older entry unreachable. Loaded operations, the resolver's cohorts, page models and
rendered pages all live here."""

from __future__ import annotations

import gc
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from kernelindex.catalog.db import Catalog

T = TypeVar("T")


class VersionedCache:
    """A bounded LRU keyed on (catalog URL, catalog version, key): at most ``size`` entries, and at most
    ``max_bytes`` in the entries that say their size (an ``nbytes`` attribute: whole answers).

    Concurrent requests for the same missing entry wait for the one computation in flight instead
    of repeating it; a failed computation is not kept. Entries of an older version of a catalog are
    dropped when a newer version is stored.
    """

    def __init__(self, size: int = 4096, max_bytes: int = 256 * 1024 * 1024) -> None:
        self.size = size
        self.max_bytes = max_bytes
        self._bytes = 0
        self._items: OrderedDict[tuple[str, int, Hashable], Any] = OrderedDict()
        self._inflight: dict[tuple[str, int, Hashable], threading.Event] = {}
        self._latest: dict[str, int] = {}
        self._lock = threading.Lock()

    def get(self, catalog: Catalog, key: Hashable, compute: Callable[[], T], *, version: int | None = None,
            long_lived: bool = False) -> T:
        """The value for ``key`` at ``version`` (the catalog's current one when not given).

        ``long_lived``: the value is large and lives as long as the catalog version (a loaded
        operation), so everything alive is moved out of the garbage collector's way once it is kept.
        """
        full = (catalog.url, catalog.version() if version is None else version, key)
        with self._lock:
            if full in self._items:
                self._items.move_to_end(full)
                return self._items[full]
            pending = self._inflight.get(full)
            if pending is None:
                self._inflight[full] = threading.Event()
        if pending is not None:
            pending.wait()
            with self._lock:
                if full in self._items:
                    return self._items[full]
            return compute()  # the first computation failed: try ourselves
        try:
            value = compute()
            self._keep(full, value)
            if long_lived:
                gc.freeze()
            return value
        finally:
            with self._lock:
                self._inflight.pop(full).set()

    def peek(self, catalog: Catalog, key: Hashable, version: int) -> Any | None:
        """The value kept for ``key`` at ``version``, or None; computes nothing."""
        with self._lock:
            return self._items.get((catalog.url, version, key))

    def put(self, catalog: Catalog, key: Hashable, value: Any, *, version: int) -> None:
        """Keep ``value`` for ``key`` at ``version`` (unless a newer version of the catalog is kept)."""
        self._keep((catalog.url, version, key), value)

    def _keep(self, full: tuple[str, int, Hashable], value: Any) -> None:
        url, version, _ = full
        with self._lock:
            if version > self._latest.get(url, -1):
                self._latest[url] = version
                for old in [k for k in self._items if k[0] == url and k[1] < version]:
                    self._drop(old)
            if full in self._items:
                self._drop(full)
            self._items[full] = value
            self._bytes += _nbytes(value)
            while len(self._items) > self.size or self._bytes > self.max_bytes:
                self._drop(next(iter(self._items)))

    def _drop(self, full: tuple[str, int, Hashable]) -> None:
        self._bytes -= _nbytes(self._items.pop(full))

    def discard(self, where: Callable[[Hashable], bool]) -> None:
        """Drop the entries whose key satisfies ``where`` (a benchmark empties the answers and keeps the
        loaded operations)."""
        with self._lock:
            for full in [k for k in self._items if where(k[2])]:
                self._drop(full)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._latest.clear()
            self._bytes = 0


def _nbytes(value: Any) -> int:
    return int(getattr(value, "nbytes", 0))


READ_CACHE = VersionedCache()
