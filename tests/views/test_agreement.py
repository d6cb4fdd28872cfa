"""Page, JSON twin and CLI agree on every field under one pinned clock (issue 9): the HTML renders
the view's JSON, the API serves it, and the CLI (local catalog or ``--api``) prints it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kernelindex.catalog.db import Catalog
from kernelindex.cli import backends
from kernelindex.cli.backends import HttpBackend, LocalBackend
from kernelindex.web.app import create_app

PINNED = datetime(2030, 6, 1, tzinfo=UTC)  # every bundled run (2024–2026) is over 180 days old by then
STALE_PILL = re.compile(r'title="observed more than 180 days ago">stale<')


@pytest.fixture(scope="module")
def app(catalog: Catalog) -> Any:
    return create_app(catalog, clock=lambda: PINNED)


@pytest.fixture(scope="module")
def site(app: Any) -> Iterator[TestClient]:
    with TestClient(app) as client:
        yield client


@pytest.fixture(scope="module")
def local(catalog: Catalog) -> LocalBackend:
    return LocalBackend(catalog.url, clock=lambda: PINNED)


@pytest.fixture
def remote(app: Any, monkeypatch: pytest.MonkeyPatch) -> HttpBackend:
    monkeypatch.setattr(backends, "http_client", lambda base: TestClient(app, base_url=base + "/api/v1"))
    return HttpBackend("http://testserver")


def _verified_run(local: LocalBackend) -> str:
    rope = local.get("/operations/rope", {"gpu": "a100"})  # the reference view: its verified card names H200's run
    return next(s["row"]["run_id"] for s in rope["headline"] if s["kind"] == "fastest_verified")


CASES = [
    ("/home", {}),
    ("/operations/rope", {}),
    ("/operations/embedding", {}),
    ("/runs/{verified}", {}),
    ("/records", {}),
    ("/search", {"q": "rope seq=2048 hidden=8192 a100"}),
]


@pytest.mark.parametrize(("path", "params"), CASES)
def test_page_json_and_cli_agree(site: TestClient, local: LocalBackend, remote: HttpBackend, path: str,
                                 params: dict[str, str]) -> None:
    path = path.format(verified=_verified_run(local))
    from_catalog = local.get(path, params)
    assert remote.get(path, params) == from_catalog  # `ki … --api URL` and `ki …` print the same JSON
    api = site.get("/api/v1" + path, params=params).json()
    api.pop("pagination", None)  # the API pages long lists; the CLI follows the cursors
    if path == "/records":
        assert api == {**from_catalog, "cohorts": from_catalog["cohorts"][: len(api["cohorts"])]}
    else:
        assert api == from_catalog
    page = site.get("/" if path == "/home" else path, params=params)
    assert page.status_code == 200
    assert len(STALE_PILL.findall(page.text)) == _stale_shown(path, from_catalog)


def _stale_shown(path: str, data: dict[str, Any]) -> int:
    """How many "stale" pills the page shows for this JSON (the rows it renders with a date)."""
    if path.startswith("/operations/"):
        return sum(row["stale"] for row in data["ranked"])
    if path.startswith("/runs/"):
        return int(data["stale"])
    if path == "/search":
        rows = [r for c in data.get("exact", []) for r in c["rows"]]
        return sum(r["stale"] for r in rows)
    return len(STALE_PILL.findall(""))  # home and records show dates without pills


def test_pinned_clock_reaches_generated_for_and_staleness(site: TestClient, local: LocalBackend) -> None:
    api = site.get("/api/v1/operations/rope").json()
    assert api["generated_for"] == local.get("/operations/rope", {})["generated_for"] == "2030-06-01T00:00:00Z"
    assert api["ranked"] and all(row["stale"] for row in api["ranked"])
    run = site.get(f"/api/v1/runs/{_verified_run(local)}").json()
    assert run["stale"] is True
