"""/api/docs in a real browser (issue 8, defect 10): Swagger UI 5, served from this origin, renders the
OpenAPI 3.1 document under the site's strict CSP; without the explorer the page still says where the
API is described. The app is built without a catalog: the page and the schema need no data."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from test_browser import CHROMIUM, _free_port, browser  # noqa: F401 - fixtures shared with the journeys

from kernelindex.web.api.openapi import _NoCatalog

pytestmark = [pytest.mark.browser]
# Collected before any page script runs: every CSP violation, whatever reports it.
WATCH_CSP = """window.__csp = [];
document.addEventListener('securitypolicyviolation',
  e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"""


@pytest.fixture(scope="module")
def docs_url() -> Iterator[str]:
    import uvicorn

    from kernelindex.web.app import create_app

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(_NoCatalog()), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def _open(browser: Any, url: str, *, javascript: bool = True) -> tuple[Any, Any, list[str], list[str]]:  # noqa: F811
    context = browser.new_context(viewport={"width": 1280, "height": 900}, java_script_enabled=javascript)
    context.add_init_script(WATCH_CSP)
    tab = context.new_page()
    console: list[str] = []
    tab.on("console", lambda msg: console.append(msg.text) if msg.type == "error" else None)
    outside: list[str] = []
    tab.on("request", lambda req: outside.append(req.url) if not req.url.startswith(url.split("/api/")[0]) else None)
    tab.goto(url)
    return context, tab, console, outside


def test_swagger_ui_renders_the_schema_without_csp_violations(browser: Any, docs_url: str) -> None:  # noqa: F811
    context, tab, console, outside = _open(browser, docs_url + "/api/docs")
    try:
        tab.wait_for_selector(".opblock-summary-path", timeout=30_000)
        paths = tab.locator(".opblock-summary-path").all_inner_texts()
        assert any("/api/v1/operations/" in p for p in paths), paths[:5]
        assert any("/api/v1/compare" in p for p in paths)
        sections = tab.locator(".opblock-tag-section h3").all_inner_texts()
        assert sections[0].startswith("v1") and "write path" not in sections[0], sections  # reads first
        assert "OAS 3.1" in tab.inner_text(".swagger-ui .info")  # the 3.1 document, read as such
        assert tab.evaluate("window.__csp") == []
        assert console == [], f"console errors (CSP violations?): {console}"
        assert outside == [], "every asset comes from this origin"
        assert tab.get_attribute("a[href='/api/v1/openapi.json']", "href")  # the raw schema, linked
    finally:
        context.close()


def test_without_javascript_the_page_still_points_at_the_api(browser: Any, docs_url: str) -> None:  # noqa: F811
    context, tab, _, _ = _open(browser, docs_url + "/api/docs", javascript=False)
    try:
        text = tab.inner_text("main")
        assert "API reference" in text and "/api/v1/openapi.json" in text
        assert tab.locator("a[href='/docs#downloads']").count() == 1
    finally:
        context.close()
