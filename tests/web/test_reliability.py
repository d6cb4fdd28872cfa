"""One bad row must never take the site down (issue 8, defect 1): catalogs that hold a zero median
(published before validation refused them) still answer every page, and an error no handler
catches answers the site's error page or a problem+json, with every security header."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text, update
from web_helpers import FIXED_NOW, make_app

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import CatalogStateRow, RunRow
from kernelindex.readmodel.operations import operation_page
from kernelindex.web.security import SECURITY_HEADERS

SITE = ["/", "/records", "/challenges", "/operations/rope", "/search?q=rope", "/gpus",
        "/implementations/liger-kernel-rope"]
API = ["/api/v1/operations/rope", "/api/v1/records", "/api/v1/challenges", "/api/v1/search?q=rope"]


def _assert_hardened(response) -> None:  # noqa: ANN001
    for name, value in SECURITY_HEADERS:
        assert response.headers.get(name.decode()) == value.decode(), name
    assert response.headers["cache-control"] == "no-store" or response.status_code < 400


def _zero_the_leaders(catalog: Catalog) -> list[str]:
    """Write median 0 into the rope leaders' rows, as a catalog published before the fix could hold."""
    page = operation_page(catalog, "rope", now=FIXED_NOW)
    leaders = [row.run_id for row in page.ranked[:2]]
    with catalog.engine.begin() as conn:
        conn.execute(update(RunRow).where(RunRow.run_id.in_(leaders)).values(median_ns=0, p20_ns=0))
        conn.execute(update(CatalogStateRow).values(version=CatalogStateRow.version + 1))
    return leaders


def test_a_zero_median_in_the_catalog_takes_no_page_down(liger_catalog: Catalog) -> None:
    zeroed = _zero_the_leaders(liger_catalog)
    with TestClient(make_app(liger_catalog)) as client:
        for path in SITE + API + [f"/runs/{zeroed[0]}", f"/compare?run={zeroed[0]}&run={zeroed[1]}"]:
            response = client.get(path)
            assert response.status_code == 200, (path, response.text[:300])
        page = client.get("/api/v1/operations/rope").json()
    assert not {r["run_id"] for r in page["ranked"]} & set(zeroed)  # not ranked: not a positive median


def test_a_zero_median_is_ineligible_with_its_reason(liger_catalog: Catalog) -> None:
    zeroed = _zero_the_leaders(liger_catalog)
    with TestClient(make_app(liger_catalog)) as client:
        dossier = client.get(f"/api/v1/runs/{zeroed[0]}").json()
    assert "NON_POSITIVE_MEDIAN" in str(dossier)


@pytest.fixture
def broken_client(liger_catalog: Catalog):  # noqa: ANN201
    """The app over a catalog whose runs table is gone: every read raises a real database error."""
    client = TestClient(make_app(liger_catalog), raise_server_exceptions=False)
    with liger_catalog.engine.begin() as conn:
        conn.execute(text("DROP TABLE attestations"))
        conn.execute(text("DROP TABLE runs"))
    return client


@pytest.mark.parametrize("path", ["/", "/records", "/operations/rope", "/search?q=rope"])
def test_an_unhandled_error_answers_the_error_page_hardened(broken_client: TestClient, path: str,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    response = broken_client.get(path)
    assert response.status_code == 500
    assert response.headers["content-type"].startswith("text/html")
    assert "Server error" in response.text and "<html" in response.text.lower()
    _assert_hardened(response)
    assert any(r.name == "kernelindex.web" and r.exc_info for r in caplog.records)  # the traceback is logged


@pytest.mark.parametrize("path", ["/api/v1/operations/rope", "/api/v1/records", "/api/v1/search?q=rope"])
def test_an_unhandled_api_error_answers_problem_json_hardened(broken_client: TestClient, path: str) -> None:
    response = broken_client.get(path)
    assert response.status_code == 500
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "internal_error" and response.json()["status"] == 500
    _assert_hardened(response)
