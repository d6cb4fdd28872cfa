"""Hardening: security headers on every response, cache headers on public reads, errors not cached."""

from __future__ import annotations

import logging

import pytest
from fastapi.testclient import TestClient

from kernelindex.web.render import static_url


@pytest.mark.parametrize("path", ["/docs", "/no/such/page", "/docs?bad=1"])
def test_security_headers_on_every_response(client: TestClient, path: str) -> None:
    response = client.get(path)
    csp = response.headers["content-security-policy"]
    assert "default-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "strict-origin-when-cross-origin"


def test_public_reads_are_cacheable_and_errors_are_not(client: TestClient) -> None:
    assert client.get("/docs").headers["cache-control"].startswith("public, max-age=")
    assert client.get("/no/such/page").headers["cache-control"] == "no-store"
    assert client.get("/records?view=best").headers["cache-control"] == "no-store"


def test_static_assets_are_content_addressed_and_immutable(client: TestClient) -> None:
    url = static_url("site.css")
    assert "?v=" in url
    response = client.get(url)
    assert response.status_code == 200
    assert "immutable" in response.headers["cache-control"]


def test_pages_carry_no_inline_script(client: TestClient) -> None:
    html = client.get("/docs").text
    assert "<script>" not in html
    assert "onclick=" not in html and "style=" not in html


def test_every_request_is_logged_with_duration(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="kernelindex.web.access"):
        client.get("/docs")
    lines = [r.getMessage() for r in caplog.records if r.name == "kernelindex.web.access"]
    assert any(line.startswith("GET /docs 200 ") and line.endswith("ms") for line in lines)


def test_pages_revalidate_with_etags(client: TestClient) -> None:
    first = client.get("/operations/rope")
    etag = first.headers["etag"]
    again = client.get("/operations/rope", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.headers["etag"] == etag and not again.content
    assert "content-security-policy" in again.headers


def test_json_twin_responses_are_hardened_too(client: TestClient) -> None:
    response = client.get("/api/v1/operations")
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
