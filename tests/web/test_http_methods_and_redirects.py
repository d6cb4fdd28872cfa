"""HEAD answers like GET without a body (issue 8, defect 7); trailing-slash redirects are relative,
never reflect the Host header and are not stored by shared caches (defect 11)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

PATHS = ["/", "/operations/rope", "/records", "/docs", "/search?q=rope", "/api/v1/operations",
         "/api/v1/operations/rope", "/api/v1/records", "/api/v1/search?q=rope", "/api/v1/openapi.json"]


@pytest.mark.parametrize("path", PATHS)
def test_head_answers_what_get_answers_without_a_body(client: TestClient, path: str) -> None:
    get, head = client.get(path), client.head(path)
    assert head.status_code == get.status_code == 200
    assert head.content == b""
    assert head.headers["content-type"] == get.headers["content-type"]
    assert head.headers["content-length"] == str(len(get.content))
    assert head.headers["content-security-policy"] == get.headers["content-security-policy"]


def test_head_of_a_missing_page_is_a_404(client: TestClient) -> None:
    assert client.head("/operations/warp-drive").status_code == 404
    assert client.head("/api/v1/operations/warp-drive").status_code == 404


def test_the_405_allow_header_is_true(client: TestClient) -> None:
    refused = client.post("/api/v1/operations", json={})
    assert refused.status_code == 405
    for method in refused.headers["allow"].split(", "):
        assert client.request(method, "/api/v1/operations").status_code == 200


def test_trailing_slash_redirect_is_relative_and_not_cached(client: TestClient) -> None:
    response = client.get("/operations/rope/?workload=x", headers={"host": "evil.example"}, follow_redirects=False)
    assert response.status_code == 308
    assert response.headers["location"] == "/operations/rope?workload=x"
    assert "evil.example" not in str(response.headers)
    assert response.headers["cache-control"] == "no-store"


@pytest.mark.parametrize("path", ["/no/such/page/", "/operations/warp-drive/x/"])
def test_no_redirect_off_the_site_or_to_nothing(client: TestClient, path: str) -> None:
    response = client.get(path, follow_redirects=False)
    assert response.status_code == 404 and "location" not in response.headers
