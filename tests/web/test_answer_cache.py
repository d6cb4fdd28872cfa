"""Whole answers of pure reads are kept per catalog version and day (web/answer_cache.py): a repeated
read is answered from the cache without running the route, a write shows at once, answers that must
not be stored are not, and the cache stays within its byte budget."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from web_helpers import FIXED_NOW, make_app, rope_keys_of

from kernelindex.catalog.db import Catalog, open_catalog
from kernelindex.catalog.lifecycle import retract
from kernelindex.readmodel.cache import VersionedCache
from kernelindex.web.answer_scope import kept_paths
from kernelindex.web.app import create_app
from kernelindex.web.kept_answers import KeptAnswer, Recorder


def test_a_repeated_read_is_answered_without_running_its_route(liger_catalog: Catalog,
                                                               view_data_calls: list[str]) -> None:
    with TestClient(make_app(liger_catalog)) as client:
        first = client.get("/api/v1/operations/rope")
        routed = len(view_data_calls)
        again = client.get("/api/v1/operations/rope")
        head = client.head("/api/v1/operations/rope")
    assert routed >= 1 and len(view_data_calls) == routed  # the second GET and the HEAD never reached the view
    assert again.content == first.content and again.headers["content-type"] == first.headers["content-type"]
    assert head.status_code == 200 and not head.content and head.headers["etag"] == again.headers["etag"]
    assert again.headers["cache-control"].startswith("public") and "content-security-policy" in again.headers


def test_json_twins_revalidate_with_their_etag(client: TestClient) -> None:
    client.get("/api/v1/records")
    kept = client.get("/api/v1/records")
    etag = kept.headers["etag"]
    again = client.get("/api/v1/records", headers={"If-None-Match": f'"other", {etag}'})
    assert again.status_code == 304 and not again.content and again.headers["etag"] == etag
    assert client.get("/api/v1/records", headers={"If-None-Match": '"other"'}).status_code == 200


def test_a_write_shows_at_once(liger_catalog: Catalog) -> None:
    leader = rope_keys_of(liger_catalog)["leader"]
    with TestClient(make_app(liger_catalog)) as client:
        client.get(f"/api/v1/runs/{leader}")
        before = client.get(f"/api/v1/runs/{leader}").json()
        retract(liger_catalog, leader, reason="timer bug", actor="tests", at=datetime(2026, 1, 2, tzinfo=UTC))
        after = client.get(f"/api/v1/runs/{leader}").json()
    assert before["retraction"] is None and before["rank"] == 1
    assert after["retraction"]["reason"] == "timer bug" and after["rank"] is None


def test_the_day_is_part_of_the_key(liger_catalog: Catalog) -> None:
    today = [FIXED_NOW]
    with TestClient(create_app(liger_catalog, clock=lambda: today[0])) as client:
        client.get("/api/v1/home")
        first = client.get("/api/v1/home").json()
        today[0] = FIXED_NOW + timedelta(days=400)
        later = client.get("/api/v1/home").json()
    assert first != later  # staleness moved with the day: not the kept answer of the day before


@pytest.mark.parametrize(("status", "headers", "kept"), [
    (200, [(b"content-type", b"text/html")], True),
    (200, [(b"set-cookie", b"csrf=1")], False),
    (200, [(b"Cache-Control", b"no-store")], False),
    (404, [], False),
    (304, [], False),
])
def test_only_plain_successful_answers_are_kept(status: int, headers: list[tuple[bytes, bytes]], kept: bool) -> None:
    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        sent.append(message)

    async def answer() -> KeptAnswer | None:
        recorder = Recorder(send)
        await recorder.send({"type": "http.response.start", "status": status, "headers": headers})
        await recorder.send({"type": "http.response.body", "body": b"abc", "more_body": True})
        await recorder.send({"type": "http.response.body", "body": b"def"})
        return recorder.answer(("", 1))

    result = asyncio.run(answer())
    assert len(sent) == 3  # passed through whatever is kept
    assert (result is not None) == kept
    if result is not None:
        assert result.body == b"abcdef" and result.etag.startswith(b'W/"') and (b"etag", result.etag) in result.headers


def test_an_error_answer_is_computed_each_time(client: TestClient, view_data_calls: list[str]) -> None:
    assert client.get("/operations/no-such-thing").status_code == 404
    asked = len(view_data_calls)
    assert client.get("/operations/no-such-thing").status_code == 404 and len(view_data_calls) == asked + 1


def test_the_pure_reads_are_kept_routes(client: TestClient) -> None:
    kept = kept_paths(client.app.routes)  # type: ignore[attr-defined]
    assert {"/", "/operations/{slug}", "/api/v1/operations/{slug}", "/search", "/api/v1/search", "/gpus", "/docs",
            "/api/v1/operations", "/runs/{run_id}/samples.json"} <= kept


def test_the_cache_keeps_within_its_byte_budget(empty_catalog: Catalog) -> None:
    cache = VersionedCache(size=100, max_bytes=10_000)
    version = empty_catalog.version()
    for n in range(5):
        answer = KeptAnswer(200, (), b"x" * 3_000, b'W/"x"', ("", version))
        cache.put(empty_catalog, ("answer", n), answer, version=version)
    kept = [n for n in range(5) if cache.peek(empty_catalog, ("answer", n), version) is not None]
    assert kept == [2, 3, 4]  # the oldest went first; 9,000 of 10,000 bytes
    cache.put(empty_catalog, "small", {"model": 1}, version=version)  # no size: counts as an entry only
    assert cache.peek(empty_catalog, ("answer", 2), version) is not None


def test_the_version_is_read_fresh_after_a_write_elsewhere(liger_catalog: Catalog) -> None:
    """The version read runs on its own autocommit engine: a write through another catalog object (as
    ``ki import`` in another process) is seen by the very next read, with no snapshot held between reads."""
    leader = rope_keys_of(liger_catalog)["leader"]
    other = open_catalog(liger_catalog.url, migrate_schema=False)
    try:
        seen = liger_catalog.version()
        retract(other, leader, reason="timer bug", actor="tests", at=datetime(2026, 1, 2, tzinfo=UTC))
        assert liger_catalog.version() > seen and liger_catalog.version_engine is not None
    finally:
        other.dispose()
