"""/challenges and /api/v1/challenges come a numbered page at a time (?page=, readmodel.paging, as GPU pages
do): the whole list was ~5,100 rows, a 952 KB page 15,500 px tall and a 7 MB JSON twin. Pages cover the one
ordered list (unmeasured workloads, unbeaten baselines, single-entry cohorts, stale records) without overlap;
a page that does not exist is the site's 400 page and the API's problem+json naming `page`."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient
from web_helpers import FIXED_NOW

from kernelindex.catalog.db import Catalog
from kernelindex.readmodel.pages_challenges import PER_PAGE, SECTIONS, _all_challenges


def _rows(page: dict[str, Any]) -> list[tuple[str, ...]]:
    """The page's rows in order, each named by its section and what it is."""
    rows = [("unmeasured", gaps["operation"], cell["workload"])
            for gaps in page["unmeasured"] for cell in gaps["cells"]]
    for name, _, _ in SECTIONS[1:]:
        rows += [(name, cohort["operation"], cohort["cohort_key"]) for cohort in page[name]]
    return rows


def _every_page(client: TestClient) -> list[dict[str, Any]]:
    pages = [client.get("/api/v1/challenges").json()]
    while pages[-1]["paging"]["next"]:
        answer = client.get("/api/v1/challenges", params={"page": pages[-1]["paging"]["next"]})
        assert answer.status_code == 200
        pages.append(answer.json())
    return pages


def test_pages_cover_the_ordered_list_once(client: TestClient, catalog: Catalog) -> None:
    pages = _every_page(client)
    whole = _all_challenges(catalog, FIXED_NOW)
    expected = [("unmeasured", g.operation, c.workload) for g in whole.unmeasured for c in g.cells]
    for name, _, _ in SECTIONS[1:]:
        expected += [(name, s.operation, s.cohort_key) for s in getattr(whole, name)]
    assert len(expected) > 2 * PER_PAGE  # the bundled catalog needs several pages
    first, second = _rows(pages[0]), _rows(pages[1])
    assert len(first) == len(second) == PER_PAGE and not set(first) & set(second)
    assert [row for page in pages for row in _rows(page)] == expected  # in order, nothing twice, nothing left out
    assert all(len(_rows(page)) <= PER_PAGE for page in pages)
    paging = pages[0]["paging"]
    assert (paging["page"], paging["first"], paging["last"], paging["total"], paging["previous"], paging["next"]) \
        == (1, 1, PER_PAGE, len(expected), None, 2)
    assert paging["pages"] == len(pages) == -(-len(expected) // PER_PAGE)
    # Every page carries the whole catalog's counts and where each section lies; a section's first/last say
    # which of its rows this page holds.
    for page in pages:
        assert page["counts"] == pages[0]["counts"]
        for section, start in zip(page["sections"], pages[0]["sections"], strict=True):
            assert (section["total"], section["first_page"], section["last_page"]) == \
                (start["total"], start["first_page"], start["last_page"])
            here = [r for r in _rows(page) if r[0] == section["name"]]
            assert (section["last"] - section["first"] + 1 if section["first"] else 0) == len(here)


def test_an_operation_split_over_two_pages_says_how_many_cells_it_has(client: TestClient) -> None:
    pages = _every_page(client)
    totals: dict[str, int] = {}
    for page in pages:
        for gaps in page["unmeasured"]:
            assert totals.setdefault(gaps["operation"], gaps["cells_total"]) == gaps["cells_total"]
    cells = {op: sum(len(g["cells"]) for page in pages for g in page["unmeasured"] if g["operation"] == op)
             for op in totals}
    assert cells == totals
    split = [op for op in totals if sum(1 for p in pages for g in p["unmeasured"] if g["operation"] == op) > 1]
    assert split  # with 50 rows a page, some operation's workloads continue on the next page
    page = next(p for p in pages if any(g["operation"] == split[0] and len(g["cells"]) < g["cells_total"]
                                        for g in p["unmeasured"]))
    html = client.get("/challenges", params={"page": page["paging"]["page"]}).text
    assert re.search(r"workloads lack a priority GPU \(\d+ on this page\)", html)


def test_the_html_page_is_one_page_of_rows_with_a_count_and_links(client: TestClient) -> None:
    first = client.get("/challenges")
    assert first.status_code == 200
    total = client.get("/api/v1/challenges").json()["paging"]["total"]
    paged = re.sub(r'<section aria-labelledby="model-calls">.*?</section>', "", first.text, flags=re.S)  # issue 49
    rows = re.findall(r"<tr>|<tr class=", re.sub(r"<thead>.*?</thead>", "", paged, flags=re.S))
    assert len(rows) == PER_PAGE  # no requests yet: every body row is a challenge (popular models' calls aside)
    assert f"Showing 1–{PER_PAGE} of {total:,} challenges" in first.text
    assert re.search(r'<a rel="next" href="/challenges\?page=2">', first.text)
    assert 'href="/api/v1/challenges"' in first.text
    second = client.get("/challenges?page=2")
    assert second.status_code == 200 and second.text != first.text
    assert f"Showing {PER_PAGE + 1}–{2 * PER_PAGE} of {total:,} challenges" in second.text
    assert re.search(r'<a rel="prev" href="/challenges">', second.text)
    assert 'href="/api/v1/challenges?page=2"' in second.text
    assert client.get("/challenges?page=1").text == first.text
    # The section index and the counts link to where each list starts.
    api = client.get("/api/v1/challenges").json()
    stale = next(s for s in api["sections"] if s["name"] == "stale_records")
    assert f'href="/challenges?page={stale["first_page"]}#stale"' in first.text
    assert "Stale records" in client.get(f"/challenges?page={stale['first_page']}").text


def test_rope_gaps_are_on_the_page_the_json_twin_puts_them(client: TestClient) -> None:
    page = next(p for p in _every_page(client) if any(g["operation"] == "rope" for g in p["unmeasured"]))
    html = client.get("/challenges", params={"page": page["paging"]["page"]}).text
    assert "Rotary position embedding" in html and "Not measured on a priority GPU" in html


@pytest.mark.parametrize("page", ["0", "-1", "abc", "1.5", "99999", " 2", "9999"])
def test_a_page_that_does_not_exist_is_refused_with_help(client: TestClient, page: str) -> None:
    html = client.get("/challenges", params={"page": page})
    assert html.status_code == 400 and "Bad request" in html.text and "page" in html.text
    api = client.get("/api/v1/challenges", params={"page": page})
    assert api.status_code == 400 and api.headers["content-type"].startswith("application/problem+json")
    assert [e["field"] for e in api.json()["errors"]] == ["page"]
    if page == "9999":
        pages = client.get("/api/v1/challenges").json()["paging"]["pages"]
        assert f"pages run from 1 to {pages}" in html.text and f"pages run from 1 to {pages}" in api.json()["detail"]


def test_the_schema_declares_the_page_parameter(app: Any) -> None:
    parameters = app.openapi()["paths"]["/api/v1/challenges"]["get"]["parameters"]
    parameter = next(p for p in parameters if p["name"] == "page")  # beside it: format (the CSV twin)
    schema = next(s for s in parameter["schema"].get("anyOf", [parameter["schema"]]) if "pattern" in s)
    assert parameter["name"] == "page" and parameter["in"] == "query" and not parameter.get("required")
    assert schema["pattern"] == "^[1-9][0-9]{0,3}$" and schema["maxLength"] == 4
