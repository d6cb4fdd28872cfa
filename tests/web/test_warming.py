"""A serving worker re-warms its read models after a publication (once a burst of versions has
settled) and when the day changes, so the first visitor after a write does not load every operation."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, date, datetime
from functools import partial

import pytest
from fastapi.testclient import TestClient
from web_helpers import FIXED_NOW, rope_keys_of

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.lifecycle import retract
from kernelindex.readmodel import summaries
from kernelindex.readmodel.cache import READ_CACHE
from kernelindex.web import pages, warming
from kernelindex.web.app import create_app
from kernelindex.web.shared_site_answers import claim_warming


class _Script(threading.Event):
    """A stop event that replays one (version, day) per poll and stops when the script ends."""

    def __init__(self, states: list[tuple[int, date]]) -> None:
        super().__init__()
        self.states, self.at = states, 0

    def current(self) -> tuple[int, date]:
        return self.states[self.at]

    def is_set(self) -> bool:
        return self.at >= len(self.states)

    def wait(self, timeout: float | None = None) -> bool:
        self.at += 1
        return self.is_set()


def _warmed(states: list[tuple[int, date]],
            claim: Callable[[tuple[int, date]], bool] | None = None) -> list[tuple[int, date]]:
    script, warmed = _Script(states), []
    warming.keep_warm(lambda: script.current()[0], lambda: script.current()[1],
                      lambda: warmed.append(script.current()), script, poll_s=0, claim=claim)
    return warmed


def test_warms_at_start_then_each_settled_version_and_day() -> None:
    d1, d2 = date(2026, 1, 1), date(2026, 1, 2)
    states = [(1, d1), (1, d1), (2, d1), (3, d1), (4, d1), (4, d1), (4, d1), (4, d2), (4, d2)]
    # version 2 and 3 are a burst (each seen once): only the settled 4 is warmed, then the new day
    assert _warmed(states) == [(1, d1), (4, d1), (4, d2)]


def test_after_its_start_a_worker_warms_only_the_versions_it_claims(empty_catalog: Catalog) -> None:
    """Two workers of one catalog: each warms at start, then each new version is warmed by the first to claim it."""
    d1 = date(2026, 1, 1)
    states = [(1, d1), (1, d1), (2, d1), (2, d1), (3, d1), (3, d1)]
    claim = partial(claim_warming, empty_catalog)
    assert [_warmed(states, claim), _warmed(states, claim)] == [[(1, d1), (2, d1), (3, d1)], [(1, d1)]]


def test_a_failing_warm_or_version_read_does_not_stop_the_loop() -> None:
    script, calls = _Script([(1, date(2026, 1, 1))] * 2 + [(2, date(2026, 1, 1))] * 2), []

    def version() -> int:
        if script.at == 1:
            raise OSError("database restarting")
        return script.current()[0]

    def warm() -> None:
        calls.append(script.current()[0])
        raise RuntimeError("boom")

    warming.keep_warm(version, lambda: script.current()[1], warm, script, poll_s=0)
    assert calls == [1, 2]


def _summaries_key() -> tuple[str, str]:
    return ("operation-summaries", FIXED_NOW.date().isoformat())


def test_a_publication_is_warmed_in_the_background(liger_catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warming, "POLL_S", 0.05)
    READ_CACHE.clear()
    app = create_app(liger_catalog, clock=lambda: FIXED_NOW, warm=True)
    with TestClient(app):
        first = liger_catalog.version()
        assert _eventually(lambda: READ_CACHE.peek(liger_catalog, _summaries_key(), first) is not None)
        retract(liger_catalog, rope_keys_of(liger_catalog)["leader"], reason="timer bug", actor="tests",
                at=datetime(2026, 1, 2, tzinfo=UTC))
        version = liger_catalog.version()
        assert _eventually(lambda: READ_CACHE.peek(liger_catalog, _summaries_key(), version) is not None)


def test_warming_computes_what_every_site_wide_page_reads(liger_catalog: Catalog,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """/records and /challenges read every operation's summary too (seconds cold with every source): warming
    computes the summaries and the challenges' table, so the request after it only projects them."""
    READ_CACHE.clear()
    app = create_app(liger_catalog, clock=lambda: FIXED_NOW)
    pages.warm(app)
    version = liger_catalog.version()
    assert READ_CACHE.peek(liger_catalog, _summaries_key(), version) is not None
    assert READ_CACHE.peek(liger_catalog, ("service", "challenges", FIXED_NOW.date().isoformat()), version) is not None
    gathered: list[int] = []
    original = summaries._gather
    monkeypatch.setattr(summaries, "_gather", lambda *a, **k: gathered.append(1) or original(*a, **k))
    with TestClient(app) as client:
        for path in ("/", "/records", "/api/v1/records", "/challenges"):
            assert client.get(path).status_code == 200, path
    assert gathered == []


def _eventually(check: Callable[[], bool], seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False
