"""/api/docs over HTTP (issue 8, defect 10; the browser test renders it): a site page with the API's
links in its HTML, Swagger UI 5's files served from this origin and cached by version, no inline
script, and every link to it in the templates resolving."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kernelindex import urls
from kernelindex.web import api_docs
from kernelindex.web.api.openapi import _NoCatalog
from kernelindex.web.app import create_app

TEMPLATES = Path(api_docs.__file__).parent / "templates"


@pytest.fixture(scope="module")
def client() -> Any:
    with TestClient(create_app(_NoCatalog())) as test_client:
        yield test_client


def test_the_page_links_the_schema_and_loads_only_own_scripts(client: TestClient) -> None:
    page = client.get("/api/docs")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert 'href="/api/v1/openapi.json"' in page.text and 'href="/docs#downloads"' in page.text
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", page.text, re.S)
    assert scripts and all(body.strip() == "" and 'src="/' in attrs for attrs, body in scripts)
    assert '/static/swagger-ui/swagger-ui-bundle.js?v=1.7.7"' in page.text


def test_the_explorer_files_come_from_the_pinned_package(client: TestClient) -> None:
    bundle = client.get("/static/swagger-ui/swagger-ui-bundle.js?v=1.7.7")
    assert bundle.status_code == 200 and bundle.headers["cache-control"].endswith("immutable")
    assert b'PACKAGE_VERSION:"5.' in bundle.content  # Swagger UI 5: renders OpenAPI 3.1 (4.x does not)
    assert client.get("/static/swagger-ui/swagger-ui.css?v=1.7.7").status_code == 200
    assert client.get("/docs/oauth2-redirect").status_code == 404  # FastAPI's CDN page is gone


def test_without_the_package_the_page_says_so_and_still_links(monkeypatch: pytest.MonkeyPatch,
                                                             client: TestClient) -> None:
    monkeypatch.setattr(api_docs, "assets_version", lambda: None)
    page = client.get("/api/docs")
    assert page.status_code == 200 and "fastapi-offline" in page.text
    assert '<script src="/static/swagger' not in page.text
    assert 'href="/api/v1/openapi.json"' in page.text


def test_every_link_to_the_api_reference_resolves(client: TestClient, catalog: Any) -> None:
    # templates build these links with the URL builder (urls.API_DOCS): read them from rendered pages
    # templates build these links with the URL builder: read them from rendered pages of a real catalog
    with TestClient(create_app(catalog)) as site:
        workload = site.get("/api/v1/operations/rope").json()["workloads"][0]["key"]
        pages = ("/", "/docs", urls.ask("rope", workload, "b200"))  # the ask form links the API's route
        links = {m for p in pages for m in re.findall(r'href="(/api/docs[^"]*)"', site.get(p).text)}
    assert {"/api/docs", "/api/docs#/v1%20write%20path/post_request_api_v1_requests_post"} <= links
    operation_ids = {op["operationId"] for item in client.get("/api/v1/openapi.json").json()["paths"].values()
                     for op in item.values()}
    for link in links:
        assert client.get(link.split("#")[0]).status_code == 200
        if "#/" in link:  # Swagger UI's deep link: #/<tag>/<operationId>
            assert link.rsplit("/", 1)[1] in operation_ids
