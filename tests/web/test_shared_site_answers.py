"""A site-wide answer is computed again once per catalog version for every worker, not once per worker (issue 50):
two apps over one catalog stand for two workers of ``ki serve`` (each its own catalog URL, so each keeps its own
answers, versions and read model, as a process does). After a publication the first worker to claim the records
ledger computes it; the second serves its previous answer meanwhile, then keeps the first one's, computing
nothing; both then answer the same."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import httpx
import pytest
from web_helpers import FIXED_NOW

from kernelindex.catalog.db import Catalog, open_catalog
from kernelindex.catalog.lifecycle import retract
from kernelindex.readmodel.operations import operation_page
from kernelindex.views import table
from kernelindex.web.app import create_app

pytestmark = pytest.mark.backends("sqlite", "postgresql")
PATH = "/api/v1/records"


@pytest.fixture
def second_worker(liger_catalog: Catalog) -> Iterator[Catalog]:
    """The same database under another URL: nothing this process keeps per catalog is shared with the first."""
    separator = "&" if "?" in liger_catalog.url else "?"
    extra = "timeout=30" if liger_catalog.url.startswith("sqlite") else "application_name=second-worker"
    catalog = open_catalog(f"{liger_catalog.url}{separator}{extra}", migrate_schema=False)
    yield catalog
    catalog.dispose()


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], threading.Event, threading.Event]:
    """(calls, started, release): each view data computation's catalog URL, in order; once armed by
    ``started.clear()``, the next one signals ``started`` and waits for ``release``."""
    calls: list[str] = []
    started, release = threading.Event(), threading.Event()
    started.set()
    original = table.View.data

    def data(self: table.View, catalog: Catalog, now: datetime, args: Any) -> dict[str, Any]:
        calls.append(catalog.url)
        if not started.is_set():
            started.set()
            assert release.wait(60)
        return original(self, catalog, now, args)

    monkeypatch.setattr(table.View, "data", data)
    return calls, started, release


def test_the_records_ledger_is_computed_once_for_both_workers(
        liger_catalog: Catalog, second_worker: Catalog,
        computed: tuple[list[str], threading.Event, threading.Event]) -> None:
    calls, started, release = computed
    first, second = (create_app(c, clock=lambda: FIXED_NOW, stale_for_s=60.0) for c in (liger_catalog, second_worker))
    leader = operation_page(liger_catalog, "rope", now=FIXED_NOW).ranked[0].run_id

    async def scenario() -> tuple[list[httpx.Response], list[httpx.Response], list[httpx.Response], int]:
        async with _client(first) as a, _client(second) as b:
            before = [await a.get(PATH), await b.get(PATH)]  # each worker's first answer: its own
            retract(liger_catalog, leader, reason="timer bug", actor="pytest")
            liger_catalog.written()
            since = len(calls)
            started.clear()  # the first worker's computation of the new ledger is held until released
            stale_first = await a.get(PATH)
            await asyncio.to_thread(started.wait, 60)
            during = [await asyncio.wait_for(b.get(PATH), 60) for _ in range(3)]  # the second: claimed elsewhere
            await asyncio.sleep(0.3)  # time for the second worker's task to find the claim and wait for it
            assert not release.is_set() and len(calls) == since + 1  # only the first worker computes
            release.set()
            after = [await _recomputed(a), await _recomputed(b)]
            return before, [stale_first, *during], after, len(calls) - since

    before, during, after, computations = asyncio.run(scenario())
    assert before[0].content == before[1].content
    for answer in during:  # the previous answer, marked: no error, no wait for the other worker
        assert answer.status_code == 200 and answer.headers["x-kernelindex-updating"] == "1"
        assert answer.headers["x-kernelindex-version"] == before[0].headers["x-kernelindex-version"]
    assert computations == 1  # the ledger of the new version was computed once, by the first worker
    assert after[0].content == after[1].content and after[0].headers["etag"] == after[1].headers["etag"]
    assert int(after[1].headers["x-kernelindex-version"]) > int(before[1].headers["x-kernelindex-version"])


def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


async def _recomputed(client: httpx.AsyncClient) -> httpx.Response:
    deadline = time.monotonic() + 60
    while "x-kernelindex-updating" in (answer := await client.get(PATH)).headers:
        assert time.monotonic() < deadline, f"{PATH} was not computed again"
        await asyncio.sleep(0.05)
    return answer
