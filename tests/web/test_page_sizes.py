"""No page over a megabyte on the full catalog (issue 46 item 2): the operation with the most workloads
(aiter's FP8 GEMM, 4,112 of them: a 6.7 MB page) carries a page of its workload list, the shape rows of
those workloads and a thinned chart; an implementation tuned over them a page of its records and runs; the
records ledger at most 200 cohorts. Sizes, not times: the times are bench/web.py --heaviest's."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient

from kernelindex.catalog.db import Catalog
from kernelindex.readmodel.folding import IMPLEMENTATION_ROWS_PER_PAGE, MAX_CHART_SIZES, WORKLOADS_PER_PAGE
from kernelindex.web.app import create_app

NOW = datetime(2026, 12, 2, tzinfo=UTC)
WIDEST = "gemm-a8w8-blockscale-n8192-k512"
MEGABYTE = 1_000_000


@pytest.fixture(scope="module")
def client(every_source_catalog: Catalog) -> TestClient:
    return TestClient(create_app(every_source_catalog, clock=lambda: NOW))


def test_the_widest_operation_carries_one_page_of_its_workloads(client: TestClient) -> None:
    html = client.get(f"/operations/{WIDEST}")
    first = client.get(f"/api/v1/operations/{WIDEST}").json()
    assert html.status_code == 200 and len(html.content) < MEGABYTE
    paging = first["workloads_paging"]
    assert paging["total"] > 4_000 and paging["page"] == 1 and len(first["workloads"]) == WORKLOADS_PER_PAGE
    assert {row["workload"] for row in first["shapes"]["rows"]} <= {w["key"] for w in first["workloads"]}
    assert first["shapes"]["total_rows"] > WORKLOADS_PER_PAGE
    chart_sizes = {p["x"] for s in first["scaling"]["series"] for p in s["points"]}
    assert len(chart_sizes) <= MAX_CHART_SIZES < first["scaling"]["sizes_total"]
    assert "Workload cases 1–100 of 4,1" in html.text and 'rel="next"' in html.text


def test_a_workload_opens_on_the_page_that_holds_it_and_pages_do_not_overlap(client: TestClient) -> None:
    url = f"/api/v1/operations/{WIDEST}"
    second = client.get(url, params={"page": 2}).json()
    third = client.get(url, params={"page": 3}).json()
    assert not {w["key"] for w in second["workloads"]} & {w["key"] for w in third["workloads"]}
    chosen = third["workloads"][7]["key"]
    opened = client.get(url, params={"workload": chosen}).json()
    assert opened["workloads_paging"]["page"] == 3 and opened["selected_workload"] == chosen
    past = client.get(url, params={"page": 999})
    assert past.status_code == 400 and "pages run from 1 to" in past.text


def test_an_implementation_tuned_over_thousands_of_shapes_pages_its_records_and_runs(client: TestClient) -> None:
    lines = client.get(f"/api/v1/operations/{WIDEST}").json()["implementations"]
    slug = max(lines, key=lambda line: line["workloads_measured"])["implementation"]["slug"]
    widest = client.get(f"/api/v1/implementations/{slug}").json()
    assert widest["runs_paging"]["total"] > IMPLEMENTATION_ROWS_PER_PAGE and len(widest["runs"]) == 100
    assert len(client.get(f"/implementations/{slug}").content) < MEGABYTE
    last = widest["runs_paging"]["pages"]
    tail = client.get(f"/api/v1/implementations/{slug}", params={"page": last}).json()
    assert tail["runs"] and tail["runs_paging"]["next"] is None


@pytest.mark.parametrize("query", ["view=recently-broken", "view=history", "", f"operation={WIDEST}"])
def test_every_view_of_the_records_ledger_is_under_a_megabyte(client: TestClient, query: str) -> None:
    page = client.get(f"/records?{query}")
    assert page.status_code == 200 and len(page.content) < MEGABYTE
