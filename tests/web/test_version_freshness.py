"""The served catalog answers its version from memory for ``version_fresh_s`` after a database read
(catalog/db.py), so a request makes no round trip; this process's own writes end that at once. An
operation's answers are computed again after a publication that touches that operation and kept through
one that does not; concurrent requests for a changed answer compute it once (web/answer_cache.py)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from web_helpers import FIXED_NOW, rope_keys_of

from kernelindex.catalog.db import Catalog, open_catalog
from kernelindex.catalog.lifecycle import retract
from kernelindex.readmodel.loading import load_all_operations, load_operation
from kernelindex.views import table
from kernelindex.web import answer_cache
from kernelindex.web.app import create_app

AT = datetime(2026, 1, 2, tzinfo=UTC)


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """Every time a page's model is asked of its view, its name and arguments are recorded."""
    seen: list[tuple[str, Any]] = []
    original = table.View.data

    def data(self: table.View, catalog: Catalog, now: datetime, args: Any) -> dict[str, Any]:
        seen.append((self.name, args))
        return original(self, catalog, now, args)

    monkeypatch.setattr(table.View, "data", data)
    return seen


def test_another_process_publication_shows_once_the_read_is_older_than_its_window(liger_catalog: Catalog) -> None:
    served = open_catalog(liger_catalog.url, migrate_schema=False)
    served.version_fresh_s = 600.0
    try:
        seen = served.version()
        retract(liger_catalog, rope_keys_of(liger_catalog)["leader"], reason="timer bug", actor="tests", at=AT)
        assert served.version() == seen  # within the window: from memory, no round trip
        time.sleep(0.01)
        served.version_fresh_s = 0.005  # now older than its window
        assert served.version() == liger_catalog.version() > seen
    finally:
        served.dispose()


def test_this_process_publication_ends_the_window_at_once(liger_catalog: Catalog) -> None:
    liger_catalog.version_fresh_s = 600.0
    seen = liger_catalog.version()
    retract(liger_catalog, rope_keys_of(liger_catalog)["leader"], reason="timer bug", actor="tests", at=AT)
    assert liger_catalog.version() > seen


def test_an_answer_is_restamped_by_its_operation_publication_and_kept_through_others(
        liger_catalog: Catalog, asked: list[tuple[str, Any]]) -> None:
    liger_catalog.version_fresh_s = 600.0  # as served: only this process's writes end the window
    other = next(slug for slug in load_all_operations(liger_catalog) if slug != "rope")
    other_run = next(r for r in load_operation(liger_catalog, other).runs if r.retracted is None)
    leader = rope_keys_of(liger_catalog)["leader"]
    with TestClient(create_app(liger_catalog, clock=lambda: FIXED_NOW)) as client:
        before = client.get("/api/v1/operations/rope").json()
        computed = len(asked)
        retract(liger_catalog, other_run.run_id, reason="timer bug", actor="tests", at=AT)
        assert client.get("/api/v1/operations/rope").json() == before
        assert len(asked) == computed  # another operation's publication: rope's answer kept
        retract(liger_catalog, leader, reason="timer bug", actor="tests", at=AT)
        after = client.get("/api/v1/operations/rope").json()
    assert len(asked) > computed  # rope's own publication: computed again on the very next request
    assert leader in {row["run_id"] for row in before["ranked"]}
    assert leader not in {row["run_id"] for row in after["ranked"]}


def test_concurrent_requests_for_a_changed_answer_compute_it_once(liger_catalog: Catalog, asked: list[tuple[str, Any]],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    app = create_app(liger_catalog, clock=lambda: FIXED_NOW)
    loads: list[str] = []

    def counted_load(catalog: Catalog, slug: str) -> Any:
        loads.append(slug)
        return load_operation(catalog, slug)

    monkeypatch.setattr(answer_cache, "load_operation", counted_load)
    leader = rope_keys_of(liger_catalog)["leader"]

    async def many(count: int) -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await asyncio.gather(*(client.get("/api/v1/operations/rope") for _ in range(count)))

    asyncio.run(many(1))
    retract(liger_catalog, leader, reason="timer bug", actor="tests", at=AT)
    asked.clear()
    loads.clear()
    answers = asyncio.run(many(8))
    assert {r.status_code for r in answers} == {200} and len({r.content for r in answers}) == 1
    assert leader not in {row["run_id"] for row in answers[0].json()["ranked"]}
    assert [name for name, _ in asked].count(asked[0][0]) == 1  # one computation served all eight
    assert loads == ["rope"]  # and one thread loaded rope for their stamps


def test_a_client_that_does_not_read_its_answer_holds_up_no_one(liger_catalog: Catalog) -> None:
    """The answer is kept, and handed to the requests waiting for it, once its body is whole, not once
    the client that asked first has read it."""
    app = create_app(liger_catalog, clock=lambda: FIXED_NOW)
    path = "/api/v1/operations/rope"
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "headers": [(b"host", b"test")],
             "client": ("127.0.0.1", 50000), "server": ("test", 80), "root_path": ""}

    async def scenario() -> httpx.Response:
        stalled = asyncio.Event()

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def never_reads(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body"):
                stalled.set()
                await asyncio.Event().wait()  # the body is never taken

        first = asyncio.create_task(app(scope, receive, never_reads))
        await asyncio.wait_for(stalled.wait(), 60)
        transport = httpx.ASGITransport(app=app)
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                return await asyncio.wait_for(client.get(path), 30)
        finally:
            first.cancel()

    answer = asyncio.run(scenario())
    assert answer.status_code == 200 and answer.json()["slug"] == "rope"
