"""The read model's cache: keyed on (catalog, catalog version, key), one computation per missing
entry, failures not kept, older versions dropped, bounded."""

from __future__ import annotations

import threading
import time

import pytest

from kernelindex.catalog.db import Catalog
from kernelindex.readmodel.cache import VersionedCache


def test_new_version_recomputes(empty_catalog: Catalog) -> None:
    cache = VersionedCache()
    assert cache.get(empty_catalog, "k", lambda: "a", version=1) == "a"
    assert cache.get(empty_catalog, "k", lambda: "b", version=1) == "a"
    assert cache.get(empty_catalog, "k", lambda: "b", version=2) == "b"


def test_the_current_version_is_read_from_the_catalog(empty_catalog: Catalog) -> None:
    cache = VersionedCache()
    assert cache.get(empty_catalog, "k", lambda: "a") == "a"
    assert cache.get(empty_catalog, "k", lambda: "b", version=empty_catalog.version()) == "a"


def test_a_newer_version_drops_the_older_entries(empty_catalog: Catalog) -> None:
    cache = VersionedCache()
    cache.get(empty_catalog, "k", lambda: "old", version=1)
    cache.get(empty_catalog, "other", lambda: "new", version=2)
    assert cache.get(empty_catalog, "k", lambda: "recomputed", version=1) == "recomputed"


def test_concurrent_misses_compute_once(empty_catalog: Catalog) -> None:
    cache = VersionedCache()
    calls: list[int] = []

    def slow() -> str:
        calls.append(1)
        time.sleep(0.2)
        return "value"

    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(cache.get(empty_catalog, "k", slow, version=1)))
               for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["value"] * 5 and len(calls) == 1


def test_a_failed_computation_is_not_cached(empty_catalog: Catalog) -> None:
    cache = VersionedCache()

    def boom() -> str:
        raise ValueError("no")

    with pytest.raises(ValueError):
        cache.get(empty_catalog, "k", boom, version=1)
    assert cache.get(empty_catalog, "k", lambda: "ok", version=1) == "ok"


def test_lru_bound(empty_catalog: Catalog) -> None:
    cache = VersionedCache(size=2)
    for i in range(5):
        cache.get(empty_catalog, i, lambda i=i: i, version=1)
    assert cache.get(empty_catalog, 0, lambda: "recomputed", version=1) == "recomputed"


def test_discard_drops_only_the_matching_entries(empty_catalog: Catalog) -> None:
    cache = VersionedCache()
    cache.get(empty_catalog, ("api", "search", "rope"), lambda: "answer", version=1)
    cache.get(empty_catalog, ("service", "ranked-cohorts", "rope"), lambda: "loaded", version=1)
    cache.discard(lambda key: key[:1] == ("api",))
    assert cache.get(empty_catalog, ("api", "search", "rope"), lambda: "recomputed", version=1) == "recomputed"
    assert cache.get(empty_catalog, ("service", "ranked-cohorts", "rope"), lambda: "reloaded", version=1) == "loaded"


def test_a_newer_version_of_one_scope_keeps_the_others(empty_catalog: Catalog) -> None:
    """Operation-scoped entries move with their operation's version only (readmodel/versions.py)."""
    cache = VersionedCache()
    cache.get(empty_catalog, "data", lambda: "rope@1", version=1, scope="rope")
    cache.get(empty_catalog, "data", lambda: "softmax@1", version=1, scope="softmax")
    cache.get(empty_catalog, "home", lambda: "home@1", version=1)
    cache.get(empty_catalog, "data", lambda: "rope@5", version=5, scope="rope")
    cache.get(empty_catalog, "home", lambda: "home@5", version=5)
    assert cache.peek(empty_catalog, "data", 1, scope="rope") is None  # dropped: rope moved on
    assert cache.peek(empty_catalog, "data", 1, scope="softmax") == "softmax@1"  # kept: softmax did not change
    assert cache.peek(empty_catalog, "home", 1) is None
