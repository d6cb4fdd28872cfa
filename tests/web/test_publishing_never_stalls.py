"""Publishing never stalls reading (issue 50): a publication makes out of date only the answers of what it
touched, and a reader asking for one of those while it is computed again gets the previous answer, marked
with the version it shows, at once; the new one is computed once, off the request path
(web/answer_cache.py)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from web_helpers import FIXED_NOW

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.lifecycle import retract
from kernelindex.readmodel.loading import load_operation
from kernelindex.readmodel.operations import operation_page
from kernelindex.trust.bundles import bundled_bundles, publish_bundle
from kernelindex.trust.keys import bundled_runner_keys
from kernelindex.views import table
from kernelindex.web.app import create_app


def _eventually(holds: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 60
    while not holds():
        assert time.monotonic() < deadline, "the answer was not computed again in the background"
        time.sleep(0.05)


def test_a_bundle_of_one_operation_leaves_another_operations_answer_in_place(
        liger_catalog: Catalog, view_data_calls: list[str]) -> None:
    # Trusting the runners' keys and the first runner bundle (its source is new) change every operation
    bundled_runner_keys(liger_catalog, actor="pytest")
    shipped = {path.name: path for path in bundled_bundles()}
    publish_bundle(liger_catalog, shipped["h200-sparsemax-20261130"], actor="pytest")
    assert "h200" not in load_operation(liger_catalog, "rope").gpu_slugs  # so an H200 bundle moves none of its floors
    with TestClient(create_app(liger_catalog, clock=lambda: FIXED_NOW, stale_for_s=60.0)) as client:
        rope = client.get("/api/v1/operations/rope")
        kl_div = client.get("/api/v1/operations/kl-div").json()
        computed = list(view_data_calls)
        publish_bundle(liger_catalog, shipped["h200-kl-div-20261130"], actor="pytest")
        liger_catalog.written()
        again = client.get("/api/v1/operations/rope")
        assert again.content == rope.content and "x-kernelindex-updating" not in again.headers
        assert again.headers["x-kernelindex-version"] == rope.headers["x-kernelindex-version"]
        assert view_data_calls == computed  # rope's answer was kept: not computed again
        shown = client.get("/api/v1/operations/kl-div").json()  # the previous answer, marked
        assert shown.pop("updating") and shown == kl_div
        _eventually(lambda: client.get("/api/v1/operations/kl-div").json()["eligible_runs"] > kl_div["eligible_runs"])
    assert view_data_calls.count("operation") == computed.count("operation") + 1  # kl-div's, once


@pytest.fixture
def held_rebuild(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """(started, release): once armed by ``started.clear()``, the next computation of a page's data signals
    ``started`` and waits for ``release``."""
    started, release = threading.Event(), threading.Event()
    started.set()  # not armed
    original = table.View.data

    def data(self: table.View, catalog: Catalog, now: datetime, args: Any) -> dict[str, Any]:
        if not started.is_set():
            started.set()
            assert release.wait(60)
        return original(self, catalog, now, args)

    monkeypatch.setattr(table.View, "data", data)
    return started, release


def test_a_reader_during_the_rebuild_gets_the_previous_answer(
        liger_catalog: Catalog, held_rebuild: tuple[threading.Event, threading.Event]) -> None:
    started, release = held_rebuild
    app = create_app(liger_catalog, clock=lambda: FIXED_NOW, stale_for_s=60.0)
    leader = operation_page(liger_catalog, "rope", now=FIXED_NOW).ranked[0].run_id
    paths = ["/api/v1/operations/rope", "/operations/rope", "/api/v1/records"]

    async def scenario() -> tuple[list[httpx.Response], list[httpx.Response], list[httpx.Response]]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            before = [await client.get(path) for path in paths]
            retract(liger_catalog, leader, reason="timer bug", actor="pytest")
            started.clear()  # the next computation (the background one) is held until released
            first = await client.get(paths[0])
            await asyncio.to_thread(started.wait, 60)  # the rebuild is under way, and held
            during = [await asyncio.wait_for(client.get(path), 60) for path in paths for _ in range(3)]
            assert not release.is_set()  # every answer above came while the rebuild was held
            release.set()
            return before, [first, *during], [await _recomputed(client, path) for path in paths]

    before, during, after = asyncio.run(scenario())
    assert {r.status_code for r in during} == {200}
    for answer in during:
        old = before[paths.index(answer.request.url.path)]
        assert answer.headers["x-kernelindex-updating"] == "1"
        assert answer.headers["x-kernelindex-version"] == old.headers["x-kernelindex-version"]
    assert during[0].json().pop("updating") == {"shows_version": int(before[0].headers["x-kernelindex-version"])}
    assert "Updating: this page shows the catalog as of version" in during[4].text
    assert leader in {row["run_id"] for row in during[0].json()["ranked"]}  # the previous answer
    assert leader not in {row["run_id"] for row in after[0].json()["ranked"]}  # then the new one
    assert int(after[0].headers["x-kernelindex-version"]) > int(before[0].headers["x-kernelindex-version"])


async def _recomputed(client: httpx.AsyncClient, path: str) -> httpx.Response:
    deadline = time.monotonic() + 60
    while "x-kernelindex-updating" in (answer := await client.get(path)).headers:
        assert time.monotonic() < deadline, f"{path} was not computed again"
        await asyncio.sleep(0.05)
    return answer
