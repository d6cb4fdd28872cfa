"""Adding a page is its declaration (docs/design.md §16): a new ``View`` entry, with a builder and a
template, gets its HTML page, its JSON twin and CSV, its ``ki`` options and its MCP tool's arguments with no
registration anywhere else. The example's builder is the models index's, taking one parameter more, and its
template is the models page's."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

import pytest
from fastapi import APIRouter
from fastapi.testclient import TestClient

from kernelindex import urls
from kernelindex.catalog.db import Catalog
from kernelindex.cli.page_options import PageDoor
from kernelindex.readmodel.pages_models import ModelsIndex, models_index
from kernelindex.views import params, table
from kernelindex.web import view_routes
from kernelindex.web.api.problems import ProblemRoute
from kernelindex.web.api.twins import mount_twin
from kernelindex.web.app import create_app
from kernelindex.web.mcp_server.page_tools import signature_of

SINCE = params.Param("since", params.PAGE_PATTERN, "Since which page.", "a page number", 4)


def things_page(catalog: Catalog, *, now: datetime, since: str | None) -> ModelsIndex:
    return models_index(catalog, now=now)


@pytest.fixture
def things(monkeypatch: pytest.MonkeyPatch) -> table.View:
    """One new entry: a path, a builder named by module, a template, a parameter; nothing else."""
    view = dataclasses.replace(table.VIEW["models"], name="things", path="/things-for-a-test",
                               builder=things_page, query=(SINCE,))
    monkeypatch.setitem(table.VIEW, "things", view)
    return view


def _app_with(view: table.View, catalog: Catalog) -> Any:
    """The site, with ``view`` mounted the way every declared view is (view_routes and the API's twins)."""
    app = create_app(catalog)
    site, api = APIRouter(), APIRouter(prefix=urls.API, route_class=ProblemRoute)
    view_routes.mount_page(view, site)
    mount_twin(api, view)
    app.router.routes[:0] = [*site.routes, *api.routes]  # ahead of the site's catch-all 404
    return app


def test_a_new_view_is_served_by_every_door_from_its_entry(things: table.View, empty_catalog: Catalog) -> None:
    with TestClient(_app_with(things, empty_catalog)) as client:
        page = client.get(things.path)
        twin = client.get(things.api_path, params={"since": "2"})
        csv = client.get(things.api_path, params={"format": "csv"})
        refused = client.get(things.api_path, params={"since": "x"})
    assert page.status_code == 200 and "llama" in page.text.lower()
    assert twin.status_code == 200 and twin.json()["models"], twin.text[:300]
    assert csv.status_code == 200 and csv.headers["content-type"].startswith("text/csv")
    assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "since"
    assert "since" in signature_of("things").parameters  # the MCP tool's arguments
    assert PageDoor(("things",)).query("things", {"since": "2"}) == {"since": "2"}  # the ki options
