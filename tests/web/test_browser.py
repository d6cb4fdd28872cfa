"""Real-browser journeys (Playwright driving Debian's /usr/bin/chromium) against a uvicorn server
on a free localhost port: search → operation → workload switch → run; records ledger → cohort;
compare; phone width without horizontal overflow; axe on every page type."""

from __future__ import annotations

import os
import re
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from web_helpers import make_app

from kernelindex.catalog.db import Catalog

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium"),
]
playwright_sync = pytest.importorskip("playwright.sync_api")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def base_url(catalog: Catalog) -> Iterator[str]:
    import uvicorn

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(make_app(catalog), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_sync.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


# A page at desktop and at phone width, for the UX modules that import it with base_url and browser.
WIDTHS = {"desktop": (1280, 900), "phone": (390, 844)}

@pytest.fixture(params=sorted(WIDTHS))
def tab(request: pytest.FixtureRequest, browser: Any) -> Iterator[Any]:
    width, height = WIDTHS[request.param]
    context = browser.new_context(viewport={"width": width, "height": height}, is_mobile=request.param == "phone")
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    errors: list[str] = []

    def on_console(msg: Any) -> None:
        # A deliberate 404 page reports its own status as a failed load: that is not an error.
        if msg.type == "error" and msg.location.get("url") != tab.url:
            errors.append(f"{msg.text} ({msg.location.get('url')})")

    tab.on("console", on_console)
    yield tab
    context.close()
    assert not errors, f"console errors (CSP violations?): {errors}"


def test_search_to_operation_to_workload_to_run(page: Any, base_url: str) -> None:
    page.goto(base_url + "/")
    page.keyboard.press("/")  # the enhancement: "/" focuses the search box
    assert page.evaluate("document.activeElement.id") == "site-search"
    page.keyboard.type("rope")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/search\?q=rope"))
    page.locator("main a[href^='/operations/rope']").first.click()
    page.wait_for_url(re.compile(r"/operations/rope"))
    assert re.search(r"\d+ eligible runs", page.inner_text("main"))
    workloads = page.get_by_role("navigation", name="Workload")
    workloads.get_by_role("link", name=re.compile(r"^seq = 4096 · hidden = 8192")).click()
    page.wait_for_url(re.compile(r"workload="))
    main = page.inner_text("main")
    assert "seq = 4096 · hidden = 8192" in main and "Ranking in this cohort" in main
    page.locator("table.ranked td.num a").first.click()
    page.wait_for_url(re.compile(r"/runs/[0-9a-f]{16}$"))
    assert "Canonical manifest" in page.inner_text("main")


def _source_cohort(keys: dict[str, str]) -> str:
    """Liger's A100 forward cohort (the default is now the replicated H200 runner cohort)."""
    return f"/operations/rope?workload={keys['workload']}&cohort={keys['cohort']}"


def test_ranked_row_expands_to_its_rationale(page: Any, base_url: str, rope_keys: dict[str, str]) -> None:
    page.goto(base_url + _source_cohort(rope_keys))
    row = page.locator("table.ranked details").first
    row.locator("summary").click()
    assert "8.73× faster than the baseline." in row.inner_text()  # of the rows' figures (issue 43 item 6)


def test_records_ledger_to_cohort(page: Any, base_url: str) -> None:
    page.goto(base_url + "/records")
    page.get_by_role("link", name="Rotary position embedding", exact=True).first.click()
    page.wait_for_url(re.compile(r"/records\?operation=rope"))
    page.locator("a[href^='/records?cohort=']").first.click()
    page.wait_for_url(re.compile(r"/records\?cohort=[0-9a-f]{12}"))
    assert "Record history of one cohort" in page.inner_text("main")
    page.get_by_role("link", name="Open the cohort on its operation page →").click()
    page.wait_for_url(re.compile(r"/operations/rope\?workload=[0-9a-f]{12}&cohort=[0-9a-f]{12}"))


def test_compare_two_runs(page: Any, base_url: str, rope_keys: dict[str, str]) -> None:
    page.goto(base_url + _source_cohort(rope_keys))
    ids = page.eval_on_selector_all("table.ranked td.num a", "els => els.map(e => e.getAttribute('href').slice(6))")
    page.goto(base_url + "/compare")
    page.get_by_label("Run 1").fill(ids[0])
    page.get_by_label("Run 2").fill(ids[-1])  # one row per implementation: Liger and the baseline
    page.get_by_role("form", name="Runs to compare").get_by_role("button", name="Compare").click()
    page.wait_for_url(re.compile(r"/compare\?run="))
    text = page.inner_text("main")
    assert "is faster: rank 1 in the shared cohort" in text and "winner" in text


def test_copy_button_is_revealed_by_script(page: Any, base_url: str) -> None:
    page.goto(base_url + "/operations/rope")
    assert page.locator(".slot .copy-btn").first.is_visible()


PHONE_PAGES = ["/", "/operations/rope", "/operations/embedding", "/records?operation=embedding",
               "/runs/{leader}", "/compare?run={leader}&run={baseline}", "/docs",
               "/challenges", "/implementations/liger-kernel-rope", "/gpus/a100-80gb", "/search?q=rope"]


@pytest.mark.parametrize("path", PHONE_PAGES)
def test_phone_width_has_no_horizontal_overflow(browser: Any, base_url: str, path: str,
                                               rope_keys: dict[str, str]) -> None:
    path = path.format(**rope_keys)
    context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True)
    tab = context.new_page()
    tab.goto(base_url + path)
    width = tab.evaluate("document.documentElement.scrollWidth")
    context.close()
    assert width <= 390, f"{path} is {width}px wide on a 390px screen"


AXE_PAGES = ["/", "/search", "/search?q=rope", "/operations/rope", "/operations/embedding", "/runs/{leader}",
             "/implementations/liger-kernel-rope", "/records", "/records?operation=rope",
             "/records?cohort={cohort}", "/gpus", "/gpus/a100-80gb", "/challenges",
             "/compare?run={leader}&run={baseline}", "/docs", "/operations/nope"]


@pytest.mark.parametrize("path", AXE_PAGES)
def test_axe_finds_no_serious_violations(page: Any, base_url: str, path: str, rope_keys: dict[str, str]) -> None:
    path = path.format(**rope_keys)
    from axe_playwright_python.sync_playwright import Axe

    page.goto(base_url + path)
    results = Axe().run(page)
    serious = [v for v in results.response["violations"] if v.get("impact") in ("serious", "critical")]
    summary = [(v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3]) for v in serious]
    assert not serious, f"{path}: {summary}"
