"""Every view of the page table answers HTML, JSON and (where it has rows) CSV from one ``data()``
(issue 21): walking the table, each page is rendered with a hook that keeps the data its renderer was
given, and the view's JSON twin must be that data, field for field."""

from __future__ import annotations

import csv
import html
import io
import itertools
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kernelindex import urls
from kernelindex.catalog.db import Catalog
from kernelindex.views.table import VIEWS, View
from kernelindex.web import view_routes
from kernelindex.web.app import create_app

PINNED = datetime(2030, 6, 1, tzinfo=UTC)
_FRESH = itertools.count(98765)


@pytest.fixture(scope="module")
def site(catalog: Catalog) -> Iterator[TestClient]:
    with TestClient(create_app(catalog, clock=lambda: PINNED)) as client:
        yield client


def _examples(site: TestClient) -> dict[str, tuple[dict[str, str], list[tuple[str, str]]]]:
    """Per view: its subject and query parameters for one page with rows."""
    rope = site.get(urls.api(urls.operation("rope"))).json()
    runs = [row["run_id"] for row in rope["ranked"]]
    gpu = site.get(urls.api(urls.GPUS)).json()["items"][0]["gpu"]["slug"]
    return {
        "home": ({}, []),
        "operation": ({"slug": "rope"}, []),
        "implementation": ({"slug": rope["ranked"][0]["implementation"]["slug"]}, []),
        "run": ({"run_id": runs[0]}, []),
        "records": ({}, [("operation", "rope")]),
        "gpu": ({"slug": gpu}, []),
        "challenges": ({}, []),
        "compare": ({}, [("run", runs[0]), ("run", runs[1])]),
        "search": ({}, [("q", "rope seq=2048 hidden=8192 a100")]),
        "models": ({}, []),
        "model": ({"slug": "llama-3.1-8b"}, [("gpu", "h200"), ("phase", "decode"), ("batch", "32"), ("seq", "4096")]),
        "reproduction": ({"source": "liger-kernel-benchmarks"}, []),
    }


def _json_twin(site: TestClient, view: View, path: str, query: list[tuple[str, str]]) -> dict[str, Any]:
    """The twin's answer; a paginated list is followed to its end and put back whole."""
    data = site.get(path, params=query).json()
    if view.pages is None:
        return data
    pagination, main = data.pop("pagination"), view.pages(data)
    while pagination["next_cursor"]:
        more = site.get(path, params=[*query, ("cursor", pagination["next_cursor"])]).json()
        pagination = more["pagination"]
        data[main] += more[main]
    return data


def _rendered(site: TestClient, view: View, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The data ``view``'s HTML page was rendered from, for its example."""
    subject, query = _examples(site)[view.name]
    rendered: list[dict[str, Any]] = []
    real = view_routes.renderer_of(view)
    monkeypatch.setitem(view_routes.RENDERERS, view.name,
                        lambda request, args, data: rendered.append(data) or real(request, args, data))
    # a parameter the page ignores (and a fresh `asked`) gets past the kept answers to a rendering
    fresh = str(next(_FRESH))
    page = site.get(view.path.format(**subject), params=[*query, ("utm_source", fresh), ("asked", fresh)])
    assert page.status_code == 200 and rendered, page.text[:500]
    return json.loads(json.dumps(rendered[-1]))


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: v.name)
def test_the_json_twin_is_the_data_the_page_rendered(site: TestClient, view: View,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    assert view.name in _examples(site), "a new view needs an example here"
    data = _rendered(site, view, monkeypatch)
    subject, query = _examples(site)[view.name]
    assert _json_twin(site, view, view.api_path.format(**subject), query) == data


# The pages that show no table of rows: the home page's few headline records link to the ledger (which has
# its CSV), and a run's dossier is one run.
ROWLESS = {"home", "run"}


def test_every_view_with_rows_has_a_csv() -> None:
    assert {view.name for view in VIEWS if view.csv is None} == ROWLESS


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


@pytest.mark.parametrize("view", [v for v in VIEWS if v.csv is not None], ids=lambda v: v.name)
def test_the_csv_is_the_rows_of_the_data_the_page_rendered(site: TestClient, view: View,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    assert view.csv is not None
    data = _rendered(site, view, monkeypatch)
    subject, query = _examples(site)[view.name]
    answer = site.get(view.api_path.format(**subject), params=[*query, ("format", "csv")])
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(answer.text)))
    expected = view.csv.rows(data)
    assert rows and len(rows) == len(expected), f"{len(rows)} CSV rows for {len(expected)} rows of the data"
    columns = [*view.csv.columns, "source"]
    assert [{c: row[c] for c in columns} for row in rows] == [{c: _cell(r.get(c)) for c in columns} for r in expected]
    assert all(row["source_license"] for row in rows if row["source"]), "each row's source names its license"


def test_the_use_box_is_data_of_the_operation_view_in_both_twins(site: TestClient) -> None:
    twin = site.get(urls.api(urls.operation("rope"))).json()
    page = site.get(urls.operation("rope")).text
    assert twin["use"]["answer"]["status"] == "measured" and twin["use"]["json_url"].startswith(urls.api(urls.USE))
    assert 'id="use-this"' in page and html.escape(twin["use"]["json_url"]) in page
