"""One real-browser journey for the model page (issue 49): the models list → a model → change the step with
the form (no script needed) → the page answers the new step, and its table does not hide the figures."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from kernelindex.catalog.db import Catalog

CHROMIUM = "/usr/bin/chromium"
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium")]
playwright_sync = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def base_url(verified_catalog: Catalog) -> Iterator[str]:
    import uvicorn

    from kernelindex.web.app import create_app

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(verified_catalog), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def test_models_list_to_a_step_and_back_through_the_form(base_url: str) -> None:
    with playwright_sync.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{base_url}/models")
        page.get_by_role("link", name="Llama 3.1 8B").click()
        assert page.url.endswith("/models/llama-3.1-8b")
        page.select_option("select[name=gpu]", "h200")
        page.fill("input[name=batch]", "64")
        page.get_by_role("button", name="Map this step").click()
        page.wait_for_load_state()
        assert "gpu=h200" in page.url and "batch=64" in page.url
        assert "batch 64" in page.locator("h1").inner_text() and "H200" in page.locator("h1").inner_text()
        qkv = page.locator('tr[data-call="attn.qkv_proj"]')
        assert "M=64 · N=6144 · K=4096" in qkv.inner_text()
        figure = qkv.locator("td.num").nth(1)  # the figure column, right after the count
        assert figure.is_visible() and figure.bounding_box()["x"] + 10 < 1280  # in view without scrolling
        browser.close()
