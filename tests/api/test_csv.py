"""CSV downloads: every ranked table and the records ledger parse with the csv module into a header
row plus one row per run, units in the header names, attribution on every row; pages link them."""

from __future__ import annotations

import csv
import html
import io
import re

import pytest
from fastapi.testclient import TestClient

SEARCH = "rope seq=2048 hidden=8192"


def _csv(api: TestClient, url: str, params: dict) -> tuple[list[str], list[dict[str, str]]]:
    response = api.get(url, params={**params, "format": "csv"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/csv")
    assert response.headers["content-disposition"].startswith("attachment; filename=")
    assert "liger-kernel-benchmarks" in response.headers["kernelindex-attribution"] or \
        "kernelindex-runner" in response.headers["kernelindex-attribution"]
    reader = csv.DictReader(io.StringIO(response.text, newline=""))
    rows = list(reader)
    return list(reader.fieldnames or []), rows


def _json_runs(api: TestClient, url: str, params: dict) -> list[str]:
    data = api.get(url, params=params).json()
    if url.endswith("/search"):
        return [r["run_id"] for c in data["exact"] + data["other_protocols"] for r in c["rows"]]
    if url.endswith("/records"):  # paginated: walk every page
        ids, cursor = [], None
        while True:
            data = api.get(url, params={**params, "limit": 200, **({"cursor": cursor} if cursor else {})}).json()
            if data["view"] == "history":
                ids += [e["event"]["holder"]["run_id"] for e in data["events"] if e["event"]["holder"]]
            else:
                ids += [c["leader"]["run_id"] for c in data["cohorts"] if c["leader"]]
            cursor = data["pagination"]["next_cursor"]
            if not cursor:
                return ids
    return [r["run_id"] for r in data["ranked"]]


@pytest.mark.parametrize(("url", "params"), [
    ("/api/v1/operations/rope", {}),
    ("/api/v1/operations/embedding", {}),
    ("/api/v1/search", {"q": SEARCH}),
    ("/api/v1/records", {}),
    ("/api/v1/records", {"operation": "rope", "view": "history"}),
])
def test_csv_has_a_header_and_one_row_per_run(api: TestClient, url: str, params: dict) -> None:
    header, rows = _csv(api, url, params)
    assert [r["run_id"] for r in rows] == _json_runs(api, url, params)
    assert rows and {"median_ns", "observed_at_utc", "source", "source_license", "source_attribution"} <= set(header)
    assert not {"median", "observed_at", "vs_first"} & set(header)
    for row in rows:
        assert row["median_ns"].isdigit() and row["run_url"] == f"/runs/{row['run_id']}"
        if row["source"] == "liger-kernel-benchmarks":
            assert row["source_license"] == "BSD-2-Clause" and "LinkedIn" in row["source_attribution"]


def test_operation_csv_is_the_pages_ranked_table(api: TestClient) -> None:
    page = api.get("/api/v1/operations/rope", params={"gpu": "a100"}).json()
    _, rows = _csv(api, "/api/v1/operations/rope", {"gpu": "a100"})
    assert [int(r["time_ns"]) for r in rows] == [r["time_ns"] for r in page["ranked"]]
    assert [int(r["median_ns"]) for r in rows] == [r["median_ns"] for r in page["ranked"]]  # deprecated alias
    assert rows[0]["time_ns"] == "59184" and rows[0]["install_command"] == 'pip install "liger-kernel==0.2.1"'
    assert {r["statistic"] for r in rows} == {"median"}
    assert {r["cohort_key"] for r in rows} == {page["selected_cohort"]}


def test_pages_link_their_csv_and_the_export(api: TestClient) -> None:
    for path in ("/operations/rope", "/records", "/search?q=" + SEARCH.replace(" ", "+")):
        page = api.get(path).text
        link = html.unescape(re.search(r'<a href="([^"]+format=csv)" download>Download CSV</a>', page).group(1))  # type: ignore[union-attr]
        assert api.get(link).headers["content-type"].startswith("text/csv"), path
    assert 'href="/api/v1/export"' in api.get("/").text
    assert 'href="/api/v1/export"' in api.get("/docs").text
