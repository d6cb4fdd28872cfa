"""The read model's one cache. Every answer is a pure function of the catalog (and of the day, for
staleness), so values are kept per (catalog, scope, version, key). The scope is an operation's slug
for what depends on that operation alone (its loaded data and what is derived from it), kept by the
operation's own version (``readmodel.versions``); the empty scope is the whole catalog, kept by the
catalog version. A newer version of a scope makes that scope's older entries unreachable, and they
are dropped; other scopes are untouched, so publishing rope never reloads softmax."""

from __future__ import annotations

import gc
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from kernelindex.catalog.db import Catalog

T = TypeVar("T")


SITE = ""  # the scope of what depends on the whole catalog
Full = tuple[str, str, int, Hashable]  # (catalog URL, scope, version, key)


class VersionedCache:
    """A bounded LRU keyed on (catalog URL, scope, version, key): at most ``size`` entries, and at most
    ``max_bytes`` in the entries that say their size (an ``nbytes`` attribute: whole answers).

    Concurrent requests for the same missing entry wait for the one computation in flight instead
    of repeating it; a failed computation is not kept. Entries of an older version of a scope are
    dropped when a newer version of that scope is stored.
    """

    def __init__(self, size: int = 4096, max_bytes: int = 256 * 1024 * 1024) -> None:
        self.size = size
        self.max_bytes = max_bytes
        self._bytes = 0
        self._items: OrderedDict[Full, Any] = OrderedDict()
        self._inflight: dict[Full, threading.Event] = {}
        self._latest: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def get(self, catalog: Catalog, key: Hashable, compute: Callable[[], T], *, version: int | None = None,
            long_lived: bool = False, scope: str = SITE) -> T:
        """The value for ``key`` at ``version`` of ``scope`` (the catalog's current version when not given).

        ``long_lived``: the value is large and lives as long as the catalog version (a loaded
        operation), so everything alive is moved out of the garbage collector's way once it is kept.
        """
        full = (catalog.url, scope, catalog.version() if version is None else version, key)
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

    def peek(self, catalog: Catalog, key: Hashable, version: int, *, scope: str = SITE) -> Any | None:
        """The value kept for ``key`` at ``version`` of ``scope``, or None; computes nothing."""
        with self._lock:
            return self._items.get((catalog.url, scope, version, key))

    def put(self, catalog: Catalog, key: Hashable, value: Any, *, version: int, scope: str = SITE) -> None:
        """Keep ``value`` for ``key`` at ``version`` of ``scope``."""
        self._keep((catalog.url, scope, version, key), value)

    def _keep(self, full: Full, value: Any) -> None:
        url, scope, version, _ = full
        with self._lock:
            latest = self._latest.get((url, scope))
            if latest is None or version > latest:
                self._latest[(url, scope)] = version
            if latest is not None and version > latest:  # a scope seen first holds nothing older
                for old in [k for k in self._items if k[0] == url and k[1] == scope and k[2] < version]:
                    self._drop(old)
            if full in self._items:
                self._drop(full)
            self._items[full] = value
            self._bytes += _nbytes(value)
            while len(self._items) > self.size or self._bytes > self.max_bytes:
                self._drop(next(iter(self._items)))

    def _drop(self, full: Full) -> None:
        self._bytes -= _nbytes(self._items.pop(full))

    def discard(self, where: Callable[[Hashable], bool]) -> None:
        """Drop the entries whose key satisfies ``where`` (a benchmark empties the answers and keeps the
        loaded operations)."""
        with self._lock:
            for full in [k for k in self._items if where(k[3])]:
                self._drop(full)

    def forget(self, catalog: Catalog, where: Callable[[Hashable], bool]) -> None:
        """Drop this catalog's entries whose key satisfies ``where`` (what a one-off pass loaded)."""
        with self._lock:
            for full in [k for k in self._items if k[0] == catalog.url and where(k[3])]:
                self._drop(full)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._latest.clear()
            self._bytes = 0


def _nbytes(value: Any) -> int:
    return int(getattr(value, "nbytes", 0))


READ_CACHE = VersionedCache()


def kept(catalog: Catalog, service: str, arguments: tuple[Hashable, ...], compute: Callable[[], T], *,
         version: int | None = None, long_lived: bool = False) -> T:
    """``compute()``, kept under (``service``, *``arguments``) at the catalog version (or ``version``): the
    one key of a service's answer or of a table derived from the whole catalog, so that every door and
    every reader asking the same question shares one computation."""
    answer: T = READ_CACHE.get(catalog, ("service", service, *arguments), compute, version=version,
                               long_lived=long_lived)
    return answer
