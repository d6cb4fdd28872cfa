"""Home, run dossier, records ledger, implementation, GPU, challenges and compare pages."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from pagetext import links_of, section, text_of
from web_helpers import source_cohort_url

from kernelindex.catalog.db import Catalog


def _run_ids(html: str) -> list[str]:
    return [h.removeprefix("/runs/") for h in links_of(html) if re.fullmatch(r"/runs/[0-9a-f]{16}", h)]


@pytest.fixture(scope="module")
def rope_runs(client: TestClient) -> list[str]:
    html = client.get(source_cohort_url(client, "rope")).text
    ranked = section(html, 'id="ranking"', 'id="scaling"')
    return list(dict.fromkeys(_run_ids(ranked)))


def test_home_has_search_counts_sources_and_latest_records(client: TestClient) -> None:
    html = client.get("/").text
    text = text_of(html)
    assert 'action="/search"' in html and 'name="q"' in html
    count = re.search(r"([\d,]+) eligible runs", text)
    assert count and int(count.group(1).replace(",", "")) >= 1649  # every Liger speed row is eligible
    for label in ("operations measured", "implementations", "verified runs", "cohorts with a record"):
        assert label in text
    assert "Liger-Kernel benchmarks" in text and "BSD-2-Clause" in text
    assert "Latest verified records" in text and "/records" in links_of(html)
    # Issue 46 item 3: one search box, the families with their counts, no chip per operation
    assert html.count('name="q"') == 1 and 'id="site-search"' in html
    assert re.search(r"positional-embedding · \d+ operations?", text) and "/search#family-positional-embedding" in html
    assert "/operations/rope" not in links_of(section(html, 'id="families"', 'id="latest"'))
    # Issue 22 item 7: every count has its thousands separator (the home page wrote "3676")
    stats = re.findall(r'<span class="n">([^<]*)</span><span class="l">([^<]*)', html)
    assert len(stats) >= 6 and all(re.fullmatch(r"\d{1,3}(,\d{3})*", n) for n, _ in stats), stats
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})*", n) for n in re.findall(r"\(of ([\d,]+)\)", html))


def test_run_dossier(client: TestClient, rope_runs: list[str], rope_keys: dict[str, str]) -> None:
    assert rope_runs[0] == rope_keys["leader"]
    text = text_of(client.get(f"/runs/{rope_keys['leader']}").text)
    assert "Liger · 58.9 µs" in text
    assert "#1 of 2 in its cohort" in text
    assert "p20 57.9 µs · p80 59.9 µs" in text
    assert "Liger-Kernel benchmark scripts" in text and "forward" in text
    assert "NVIDIA A100 80GB" in text and "time zone not recorded by the source" in text
    assert "External id" in text and "Canonical manifest" in text
    assert 'pip install "liger-kernel==0.2.1"' in text
    assert "1.40× above it" in text


def test_records_ledger_filters_and_cohort_history(client: TestClient) -> None:
    overview = text_of(client.get("/records").text)
    assert "Rotary position embedding" in overview
    html = client.get("/records?operation=rope").text
    text = text_of(html)
    assert "Rotary position embedding" in text and "Embedding lookup" not in section(text, "Holder")
    history = next(h for h in links_of(html) if h.startswith("/records?cohort="))
    cohort = text_of(client.get(history).text)
    assert "Record history of one cohort" in cohort and "first record" in cohort
    assert client.get("/records?operation=rope&view=history").status_code == 200
    assert client.get("/records?view=recently-broken&gpu=a100-80gb&evidence=reported").status_code == 200


@pytest.mark.parametrize("query", ["view=best", "gpu=a101", "evidence=gold", "operation=ropee", "cohort=zz!"])
def test_records_bad_parameters_are_400(client: TestClient, query: str) -> None:
    response = client.get(f"/records?{query}")
    assert response.status_code == 400, query


def test_records_unknown_cohort_is_404(client: TestClient) -> None:
    assert client.get("/records?cohort=ffffffffffff").status_code == 404


def test_implementation_page_says_whether_you_can_use_it(client: TestClient) -> None:
    liger = text_of(client.get("/implementations/liger-kernel-rope").text)
    assert "Can I use this? Yes" in liger and 'pip install "liger-kernel==0.2.1"' in liger
    assert "declared BSD-2-Clause · concluded BSD-2-Clause" in liger
    assert "Records held" in liger and "Runs per workload and GPU" in liger
    compiled = text_of(client.get("/implementations/torch-compile-embedding").text)
    revisions = section(compiled, "Revisions", "Records held")
    assert "unrecorded No pinned install: the source did not record the PyTorch version." in revisions
    assert client.get("/implementations/nope").status_code == 404


def test_gpu_pages(client: TestClient, catalog: Catalog) -> None:
    a100 = text_of(client.get("/gpus/a100-80gb").text)
    assert "2039 GB/s" in a100 and "Coverage" in a100 and "Records held on A100" in a100
    from kernelindex.readmodel.pages_gpus import gpus_index

    empty = next((e for e in gpus_index(catalog) if e.eligible_runs == 0), None)
    if empty is not None:
        page = text_of(client.get(empty.url).text)
        assert f"Nothing has been measured on {empty.gpu.short} yet" in page
    assert client.get("/gpus/nope").status_code == 404
    assert "NVIDIA B200" in text_of(client.get("/gpus").text)


def test_challenges(client: TestClient) -> None:
    text = text_of(client.get("/challenges").text)  # page 1: the start of the unmeasured workloads
    assert "Not measured on a priority GPU" in text and "workloads lack a priority GPU" in text
    assert "Unbeaten baselines" in text and "Single-entry cohorts" in text and "Stale records" in text  # the index
    last = client.get("/api/v1/challenges").json()["paging"]["pages"]
    assert "Stale records" in text_of(client.get(f"/challenges?page={last}").text).split("Open challenges")[1]


def test_compare_same_cohort_declares_a_winner(client: TestClient, rope_runs: list[str]) -> None:
    text = text_of(client.get(f"/compare?run={rope_runs[1]}&run={rope_runs[0]}").text)
    assert "is faster: rank 1 in the shared cohort" in text
    assert "winner" in text and "8.77×" in text


def test_compare_across_cohorts_names_the_first_difference(client: TestClient) -> None:
    rope = client.get("/operations/rope").text
    other = client.get("/operations/embedding").text
    a, b = _run_ids(section(rope, 'id="ranking"'))[0], _run_ids(section(other, 'id="ranking"'))[0]
    text = text_of(client.get(f"/compare?run={a}&run={b}").text)
    assert "They measure different operations; no winner is declared across cohorts." in text
    assert "winner" not in section(text, "Field", "Compare other runs")


@pytest.mark.parametrize("query,status", [("run=xyz&run=abc", 400), ("run=" + "&run=".join(["ab"] * 2), 400),
                                          ("run=" + "&run=".join(f"{i:016x}" for i in range(9)), 400),
                                          ("run=ffffffffffffffff&run={leader}", 404), ("", 200),
                                          ("run={leader}", 200)])
def test_compare_input_errors(client: TestClient, rope_keys: dict[str, str], query: str, status: int) -> None:
    assert client.get(f"/compare?{query.format(**rope_keys)}").status_code == status


def test_unknown_run_is_404_and_bad_run_id_too(client: TestClient) -> None:
    assert client.get("/runs/ffffffffffffffff").status_code == 404
    assert client.get("/runs/not-a-run").status_code == 404


@pytest.mark.parametrize("path", ["/", "/docs", "/records?operation=rope", "/challenges", "/gpus", "/gpus/a100-80gb",
                                  "/implementations/liger-kernel-rope", "/runs/{leader}", "/compare", "/search?q=rope",
                                  "/operations/rope", "/api/docs"])
def test_pages_ignore_unknown_parameters_and_name_the_canonical_url(client: TestClient, rope_keys: dict[str, str],
                                                                    path: str) -> None:
    """Issue 22 item 1: a link shared with tracking parameters opens the page it stands for."""
    path = path.format(**rope_keys)
    joiner = "&" if "?" in path else "?"
    plain = client.get(path)
    shared = client.get(f"{path}{joiner}utm_source=twitter&fbclid=abc")
    assert shared.status_code == plain.status_code == 200
    assert shared.headers.get("link") == f'<{path}>; rel="canonical"'
    assert "link" not in plain.headers
    if path != "/challenges":  # its live request ages tick
        assert shared.text == plain.text


@pytest.mark.parametrize("path", ["/api/v1/operations/rope", "/api/v1/records", "/runs/{leader}/samples.json"])
def test_the_api_stays_strict_and_names_the_parameter(client: TestClient, rope_keys: dict[str, str],
                                                      path: str) -> None:
    answer = client.get(path.format(**rope_keys) + "?utm_source=x")
    assert answer.status_code == 400 and "utm_source" in answer.text


@pytest.mark.parametrize(("run", "words"), [("not-hex", "is not a run id"), ("abcdef0123", "abcdef0123")])
def test_samples_of_no_run_are_the_not_found_page(client: TestClient, run: str, words: str) -> None:
    """The samples download reads through services.reads.samples; its Problem is the 404 page naming the id."""
    answer = client.get(f"/runs/{run}/samples.json")
    assert answer.status_code == 404 and words in answer.text

