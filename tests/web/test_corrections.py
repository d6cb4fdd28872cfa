"""Corrections: a retracted or superseded run keeps its URL, shows a banner and leaves the ranking;
pages follow the catalog version (no stale cache after a write)."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi.testclient import TestClient
from pagetext import text_of
from web_helpers import make_app, rope_keys_of

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.lifecycle import retract, supersede

AT = datetime(2026, 1, 2, tzinfo=UTC)


def test_retraction_banner_and_new_leader(liger_catalog: Catalog) -> None:
    keys = rope_keys_of(liger_catalog)
    leader, cohort = keys["leader"], keys["cohort"]
    with TestClient(make_app(liger_catalog)) as client:
        before = text_of(client.get("/operations/rope?gpu=a100").text)  # the reference view (B200 is newer)
        # The row's figure is the median of Liger's two sweeps (58.9 and 59.5 µs, issue 43 item 6).
        assert "Fastest reported · usable today · NVIDIA A100 80GB · forward 59.2 µs" in before
        retract(liger_catalog, leader, reason="timer bug in the source harness", actor="tests", at=AT)
        run = text_of(client.get(f"/runs/{leader}").text)
        assert "Retracted on 2026-01-02 by tests: timer bug in the source harness" in run
        assert "Not ranked: The run was retracted." in run
        after = text_of(client.get("/operations/rope").text)
        assert "47 eligible runs" in after  # the page moved on: no stale cache after a write
        forward = text_of(client.get(f"/operations/rope?cohort={cohort}").text)
        assert "Fastest reported · usable today · NVIDIA A100 80GB · forward 59.5 µs" in forward
        history = client.get(f"/records?cohort={cohort}").text
        assert "Current holder: Liger · 59.5 µs" in text_of(history)


def test_supersession_banners_link_both_ways(liger_catalog: Catalog) -> None:
    keys = rope_keys_of(liger_catalog)
    leader, second = keys["leader"], keys["second"]
    with TestClient(make_app(liger_catalog)) as client:
        supersede(liger_catalog, second, leader, reason="re-measured", actor="tests", at=AT)
        old = text_of(client.get(f"/runs/{leader}").text)
        assert f"Superseded by run {second}" in old
        new = text_of(client.get(f"/runs/{second}").text)
        assert f"This run supersedes run {leader}" in new
