"""The HTML /search page: the same answer as /api/v1/search, rendered; empty query browses by family."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kernelindex.catalog.db import Catalog


@pytest.fixture(scope="module")
def site(catalog: Catalog) -> Iterator[TestClient]:
    from kernelindex.web.app import create_app

    app: Any = create_app(catalog)
    with TestClient(app) as client:
        yield client


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_empty_query_browses_operations_by_family(site: TestClient) -> None:
    page = site.get("/search")
    assert page.status_code == 200
    text = _text(page.text)
    assert "normalization" in text and "Layer normalization" in text and "Rotary position embedding" in text


def test_exact_query_page_shows_the_interpretation_and_leader(site: TestClient) -> None:
    page = site.get("/search", params={"q": "rope seq=2048 hidden=8192 gpu:a100"})
    text = _text(page.text)
    assert "Operation Rotary position embedding (rope) · seq 2048 · hidden 8192 · gpu A100" in text
    assert "59.18 µs" in text and "516.45 µs" in text and "one row per implementation" in text
    assert 'href="/api/v1/search?q=rope+seq%3D2048+hidden%3D8192+gpu%3Aa100"' in page.text


def test_unmeasured_shape_page_lists_neighbours_with_queries(site: TestClient) -> None:
    text = _text(site.get("/search", params={"q": "rope seq=3000 hidden=8192 a100"}).text)
    assert "Not measured at seq 3000" in text
    assert "op:rope seq=2048 hidden=8192 gpu:a100-80gb" in text and "op:rope seq=4096 hidden=8192 gpu:a100-80gb" in text


def test_bad_key_is_shown_beside_its_token_with_a_fix_link(site: TestClient) -> None:
    page = site.get("/search", params={"q": "rope gpuu:a100"})
    assert "did you mean" in _text(page.text)
    assert 'href="/search?q=rope+gpu%3Aa100"' in page.text


def test_gap_and_mismatch_on_the_page(site: TestClient) -> None:
    text = _text(site.get("/search", params={"q": "layer norm fp32 b200"}).text)
    assert "Not measured on B200" in text and "asked b200" in text


def test_unknown_parameter_is_ignored_by_the_page_and_refused_by_the_api(site: TestClient) -> None:
    page = site.get("/search", params={"q": "rope", "page": "2"})
    assert page.status_code == 200 and page.headers["link"] == '</search?q=rope>; rel="canonical"'
    assert site.get("/api/v1/search", params={"q": "rope", "page": "2"}).status_code == 400


@pytest.mark.parametrize("q", ["rope seq=2048 hidden=8192 gpu:a100", "rope seq=3000 hidden=8192 a100",
                               "layer norm fp32 b200", "norm", "rope gpuu:a100"])
def test_every_link_on_the_page_resolves(site: TestClient, q: str) -> None:
    html = site.get("/search", params={"q": q}).text
    links = {href.replace("&amp;", "&").split("#")[0] for href in re.findall(r'href="(/[^"]*)"', html)}
    links -= {""}
    broken = [(link, status) for link in sorted(links)
              if not link.startswith("/static/") and (status := site.get(link).status_code) >= 400]
    assert not broken
