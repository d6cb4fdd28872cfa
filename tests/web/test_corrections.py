"""Corrections: a retracted or superseded run keeps its URL, shows a banner and leaves the ranking;
pages follow the catalog version (no stale cache after a write)."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi.testclient import TestClient
from pagetext import section, text_of

from conftest import make_app
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.lifecycle import retract, supersede

LEADER = "5758c74b1d019097"
AT = datetime(2026, 1, 2, tzinfo=UTC)


def test_retraction_banner_and_new_leader(liger_catalog: Catalog) -> None:
    with TestClient(make_app(liger_catalog)) as client:
        before = text_of(client.get("/operations/rope").text)
        assert "Fastest reported · usable today 58.9 µs" in before
        retract(liger_catalog, LEADER, reason="timer bug in the source harness", actor="tests", at=AT)
        run = text_of(client.get(f"/runs/{LEADER}").text)
        assert "Retracted on 2026-01-02 by tests: timer bug in the source harness" in run
        assert "Not ranked: The run was retracted." in run
        after = text_of(client.get("/operations/rope").text)
        assert "47 eligible runs" in after  # the page moved on: no stale cache after a write
        forward = text_of(client.get("/operations/rope?cohort=fcb1a7e92a28").text)
        assert "Fastest reported · usable today 59.5 µs" in forward
        history = client.get("/records?cohort=fcb1a7e92a28").text
        assert "Current holder: Liger · 59.5 µs" in text_of(history)


def test_supersession_banners_link_both_ways(liger_catalog: Catalog) -> None:
    with TestClient(make_app(liger_catalog)) as client:
        ranked = section(client.get("/operations/rope").text, 'id="ranking"', 'id="scaling"')
        second = ranked.split('href="/runs/')[3][:16]
        assert second != LEADER
        supersede(liger_catalog, second, LEADER, reason="re-measured", actor="tests", at=AT)
        old = text_of(client.get(f"/runs/{LEADER}").text)
        assert f"Superseded by run {second}" in old
        new = text_of(client.get(f"/runs/{second}").text)
        assert f"This run supersedes run {LEADER}" in new
