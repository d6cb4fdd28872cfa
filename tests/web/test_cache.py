"""The page cache: keyed on the catalog version, one computation per missing entry."""

from __future__ import annotations

import threading
import time

import pytest

from kernelindex.web.render import VersionedCache


def test_new_version_recomputes() -> None:
    cache = VersionedCache()
    assert cache.get_or_compute(1, "k", lambda: "a") == "a"
    assert cache.get_or_compute(1, "k", lambda: "b") == "a"
    assert cache.get_or_compute(2, "k", lambda: "b") == "b"


def test_concurrent_misses_compute_once() -> None:
    cache = VersionedCache()
    calls: list[int] = []

    def slow() -> str:
        calls.append(1)
        time.sleep(0.2)
        return "value"

    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(cache.get_or_compute(1, "k", slow))) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["value"] * 5 and len(calls) == 1


def test_a_failed_computation_is_not_cached() -> None:
    cache = VersionedCache()

    def boom() -> str:
        raise ValueError("no")

    with pytest.raises(ValueError):
        cache.get_or_compute(1, "k", boom)
    assert cache.get_or_compute(1, "k", lambda: "ok") == "ok"


def test_lru_bound() -> None:
    cache = VersionedCache(size=2)
    for i in range(5):
        cache.get_or_compute(1, i, lambda i=i: i)
    assert cache.get_or_compute(1, 0, lambda: "recomputed") == "recomputed"
