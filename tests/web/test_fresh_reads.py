"""The answer cache's per-request reads (the catalog's versions; for /challenges the measurement requests it
shows) never run on the event loop (web/fresh_reads.py): while one is slow, every request is answered from
memory, and the read runs once, on its own thread, however many requests found the value aged."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from web_helpers import FIXED_NOW

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.lifecycle import retract
from kernelindex.readmodel.versions import VERSIONS
from kernelindex.web import fresh_reads
from kernelindex.web.app import create_app

WINDOW_S = 0.05  # the served catalog's version window, short so a test ages it by sleeping


class HeldRead:
    """Wraps a read so that, once armed, each call records its thread and waits for ``release``."""

    def __init__(self, read: Callable[[Catalog], Any]) -> None:
        self.read, self.armed, self.release = read, False, threading.Event()
        self.threads: list[str] = []

    def __call__(self, catalog: Catalog) -> Any:
        if self.armed:
            self.threads.append(threading.current_thread().name)
            assert self.release.wait(60)
        return self.read(catalog)


@pytest.fixture
def held_versions(monkeypatch: pytest.MonkeyPatch) -> HeldRead:
    held = HeldRead(VERSIONS.current)
    monkeypatch.setattr(VERSIONS, "current", held)
    return held


@pytest.fixture
def held_requests(monkeypatch: pytest.MonkeyPatch) -> HeldRead:
    held = HeldRead(fresh_reads.held_requests)
    monkeypatch.setattr(fresh_reads, "held_requests", held)
    return held


@pytest.mark.parametrize("path", ["/api/v1/operations/rope", "/challenges"])
def test_requests_are_answered_while_an_aged_read_is_held(liger_catalog: Catalog, held_versions: HeldRead,
                                                          held_requests: HeldRead, path: str) -> None:
    liger_catalog.version_fresh_s = WINDOW_S  # as served
    app = create_app(liger_catalog, clock=lambda: FIXED_NOW)

    async def scenario() -> tuple[httpx.Response, list[httpx.Response]]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
            first = await client.get(path)
            await asyncio.sleep(WINDOW_S * 2)  # the version (and the requests) read is now older than its window
            held_versions.armed = held_requests.armed = True
            during = [await asyncio.wait_for(client.get(path), 10) for _ in range(5)]
            assert not held_versions.release.is_set()  # all five came while the reads were held
            held_versions.release.set()
            held_requests.release.set()
            return first, during

    first, during = asyncio.run(scenario())
    fresh_reads.settled()  # the requests read queues behind the held versions read on the one reads' thread
    assert {r.status_code for r in during} == {200} and {r.content for r in during} == {first.content}
    assert held_versions.threads == ["kernelindex-fresh-reads_0"]  # one read for the five, off the event loop
    assert held_requests.threads == (["kernelindex-fresh-reads_0"] if path == "/challenges" else [])


def test_this_process_write_is_waited_for_and_shown(liger_catalog: Catalog, held_versions: HeldRead) -> None:
    """After this process's own write there is nothing to answer from: the request waits for the read (on
    the reads' thread) and shows the write."""
    liger_catalog.version_fresh_s = 600.0
    app = create_app(liger_catalog, clock=lambda: FIXED_NOW)
    leader = None

    async def scenario() -> tuple[httpx.Response, httpx.Response, float]:
        nonlocal leader
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
            before = await client.get("/api/v1/operations/rope")
            leader = before.json()["ranked"][0]["run_id"]
            retract(liger_catalog, leader, reason="timer bug", actor="pytest")
            held_versions.armed = True
            threading.Timer(0.3, held_versions.release.set).start()
            started = time.monotonic()
            after = await client.get("/api/v1/operations/rope")
            return before, after, time.monotonic() - started

    before, after, waited = asyncio.run(scenario())
    # the request's own read first (the answer's computation reads too, on the route's thread); none on the loop
    assert waited >= 0.3 and held_versions.threads[0] == "kernelindex-fresh-reads_0"
    assert threading.main_thread().name not in held_versions.threads
    assert int(after.headers["x-kernelindex-version"]) > int(before.headers["x-kernelindex-version"])
    assert leader not in {row["run_id"] for row in after.json()["ranked"]}
