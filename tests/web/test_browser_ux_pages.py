"""Issue 14, the rest of item 5 and item 9 in a real browser at 1280 and 390 px: GPU pages come a page
of cohorts at a time with a count and previous/next links (the JSON twin paged the same way); an
operation page asked for a GPU without data says so near the top with that GPU's floor estimate and
the nearest measured GPU, from the URL and from search; search's compatible rows stay compact on a phone."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from test_browser import CHROMIUM, WIDTHS, base_url, browser, tab  # noqa: F401 - fixtures shared with the journeys

pytestmark = [pytest.mark.browser]


def _twin(tab: Any, base: str) -> dict[str, Any]:  # noqa: F811
    href = tab.locator("main .lede a", has_text="JSON").get_attribute("href")
    return json.loads(tab.request.get(base + href).body())


def test_gpu_page_pages_its_cohorts_and_the_json_twin_pages_the_same(tab: Any, base_url: str) -> None:  # noqa: F811
    tab.goto(base_url + "/gpus/h100")
    pager = tab.get_by_role("navigation", name="Records pages")
    assert re.search(r"Page 1 of (\d+) · 1–25 of (\d+)", pager.inner_text())
    rows = tab.locator("table.cohorts tbody tr")
    assert rows.count() == 25
    height = tab.evaluate("document.documentElement.scrollHeight")
    assert height < 9000, f"the H100 page is {height} px tall"  # was 28,583 px with every cohort on one page
    first_page_first = rows.first.inner_text()
    pager.get_by_role("link", name="Next →").click()
    tab.wait_for_url(re.compile(r"/gpus/h100-sxm\?page=2$"))
    pager = tab.get_by_role("navigation", name="Records pages")
    assert "Page 2 of" in pager.inner_text() and "26–50 of" in pager.inner_text()
    assert rows.first.inner_text() != first_page_first
    twin = _twin(tab, base_url)
    paging = twin["records_paging"]
    assert (paging["page"], paging["first"], paging["last"], paging["previous"], paging["next"]) == (2, 26, 50, 1, 3)
    assert len(twin["records"]) == 25 and twin["records"][0]["url"] in rows.first.inner_html().replace("&amp;", "&")
    pager.get_by_role("link", name="← Previous").click()
    tab.wait_for_url(re.compile(r"/gpus/h100-sxm$"))
    assert rows.first.inner_text() == first_page_first


def test_a_page_past_the_last_says_which_pages_exist(tab: Any, base_url: str) -> None:  # noqa: F811
    response = tab.goto(base_url + "/gpus/h100?page=999")
    assert response.status == 400
    assert re.search(r"page 999 does not exist: pages run from 1 to \d+", tab.inner_text("main"))


def test_challenges_come_a_page_at_a_time_with_the_json_twin_paged_the_same(tab: Any, base_url: str) -> None:  # noqa: F811
    from kernelindex.readmodel.pages_challenges import PER_PAGE

    answer = tab.goto(base_url + "/challenges")
    assert len(answer.body()) < 100_000  # was 952 KB with every challenge on one page
    pager = tab.get_by_role("navigation", name="Challenges pages")
    assert re.search(rf"Page 1 of \d+ · 1–{PER_PAGE} of [\d,]+", pager.inner_text())
    rows = tab.locator("main .challenge-list tbody tr")
    assert rows.count() == PER_PAGE
    height = tab.evaluate("document.documentElement.scrollHeight")
    assert height < 12_000, f"/challenges is {height} px tall"  # was 15,500 (desktop) and 26,500 (phone)
    first = rows.first.inner_text()
    pager.get_by_role("link", name="Next →").click()
    tab.wait_for_url(re.compile(r"/challenges\?page=2$"))
    assert rows.first.inner_text() != first
    assert f"{PER_PAGE + 1}–{2 * PER_PAGE} of" in tab.get_by_role("navigation", name="Challenges pages").inner_text()
    twin = _twin(tab, base_url)
    assert (twin["paging"]["page"], twin["paging"]["previous"], twin["paging"]["next"]) == (2, 1, 3)
    shown = [c["url"] for g in twin["unmeasured"] for c in g["cells"]]
    assert shown and shown[0] in rows.first.inner_html().replace("&amp;", "&")
    assert tab.locator("#requests").is_visible()  # the live request list is on every page
    tab.get_by_role("navigation", name="Challenges pages").get_by_role("link", name="← Previous").click()
    tab.wait_for_url(re.compile(r"/challenges$"))
    assert rows.first.inner_text() == first


def test_operation_page_asked_for_an_unmeasured_gpu_says_so_first(tab: Any, base_url: str,  # noqa: F811
                                                                  rope_keys: dict[str, str]) -> None:
    tab.goto(base_url + f"/operations/rope?gpu=b200&workload={rope_keys['workload']}")
    text = tab.inner_text("main")
    banner = tab.locator(".asked-gpu").inner_text()
    assert text.index("Not measured on B200 for this workload") < text.index("Fastest")  # above the headline
    assert "Physical floor on B200: 10.7 µs" in banner and "8,000 GB/s" in banner
    # the H100 lane's verified runs (issue 44) are the newest verified evidence: issue 20 item 9's rule picks them
    assert "Nearest measured GPU: H100" in banner
    assert "Shown below, the nearest measured GPU: NVIDIA H100" in banner
    assert "NVIDIA H100" in tab.locator(".slot").first.inner_text()
    assert text.count("Not measured on B200 for this workload (forward)") == 1  # not repeated in the GPU lines
    assert "gpu=b200" in str(tab.get_by_role("link", name="JSON", exact=True).first.get_attribute("href"))


def test_asked_h100_shows_its_own_verified_cohort(tab: Any, base_url: str,  # noqa: F811
                                                  rope_keys: dict[str, str]) -> None:
    tab.goto(base_url + f"/operations/rope?gpu=h100&workload={rope_keys['workload']}")
    assert tab.locator(".asked-gpu").count() == 0  # the H100 lane measured it (issue 44)
    assert "NVIDIA H100" in tab.locator(".slot").first.inner_text()


def test_asked_gpu_with_data_selects_its_cohort_and_says_nothing(tab: Any, base_url: str) -> None:  # noqa: F811
    tab.goto(base_url + "/operations/rope?gpu=h200")
    assert tab.locator(".asked-gpu").count() == 0
    assert "NVIDIA H200" in tab.locator(".slot").first.inner_text()


def test_unknown_gpu_is_refused_with_the_known_ones(tab: Any, base_url: str) -> None:  # noqa: F811
    response = tab.goto(base_url + "/operations/rope?gpu=h900")
    known = "no GPU 'h900' in the datasheet table; known: a10, a100-40gb, a100-80gb"
    assert response.status == 400 and known in tab.inner_text("main")


def test_search_for_an_unmeasured_gpu_leads_to_the_floor_and_nearest(tab: Any, base_url: str) -> None:  # noqa: F811
    tab.goto(base_url + "/search?q=rope+seq+2048+hidden+8192+on+b200")
    text = tab.inner_text("main")
    assert text.index("Not measured on B200 for this query") < text.index("Compatible")
    tab.locator(".asked-gpu a").click()
    tab.wait_for_url(re.compile(r"/operations/rope\?workload=\w+&gpu=b200"))
    assert "Physical floor on B200: 10.7 µs" in tab.locator(".asked-gpu").inner_text()


def test_compatible_rows_are_compact_on_a_phone(tab: Any, base_url: str) -> None:  # noqa: F811
    tab.goto(base_url + "/search?q=rope+seq+2048+hidden+8192+on+h100")
    rows = tab.locator("table.compat tbody tr")
    heights = rows.evaluate_all("els => els.map(e => e.getBoundingClientRect().height)")
    # ~260 px when each word had its own line; ~170 before each figure said what it is ("mean, as its source timed
    # it", one more wrapped line in some rows)
    assert len(heights) == 12 and max(heights) < 200, heights
    tops = rows.first.locator(".mismatch").first.evaluate(
        "e => [...e.getClientRects()].map(r => Math.round(r.top))")
    assert len(set(tops)) == 1, tops  # "gpu: h200 (asked h100-sxm)" on one line, not one word per line
    assert tab.evaluate("document.documentElement.scrollWidth") <= tab.viewport_size["width"]


def test_walk_fixes_on_the_rope_page(tab: Any, base_url: str,  # noqa: F811
                                     rope_keys: dict[str, str]) -> None:
    tab.goto(base_url + f"/operations/rope?workload={rope_keys['workload']}&cohort={rope_keys['cohort']}")
    # One H200 forward cohort: runner 19's v4 runs superseded both runner 7's and the independent check's (issue 42
    # item 4: one verified figure per kernel); a row needs no runner tag when nothing reads alike.
    h200 = tab.locator("section[aria-labelledby=records] tbody tr",
                       has_text=re.compile(r"NVIDIA H200 SXM 141GB · forward(?!\+)"))
    assert h200.count() == 1 and "runner independent-check-runner" not in h200.first.inner_text()
    # Liger's two identical peak-memory rows are one row that counts them.
    memory = tab.locator("section", has=tab.locator("h2", has_text="Peak memory")).locator("tbody tr")
    titles = [t.split("\t")[0] for t in memory.all_inner_texts()]
    assert len(titles) == len(set(titles)) and "Liger (2 runs, same figure)" in titles
    # End labels sit in the chart's right margin, past every point: never on top of a line.
    chart = tab.locator("svg.scaling-chart")
    right = max(chart.locator("circle").evaluate_all("els => els.map(e => e.getBoundingClientRect().right)"))
    lefts = chart.locator(".labels text").evaluate_all("els => els.map(e => e.getBoundingClientRect().left)")
    assert lefts and min(lefts) > right


def test_run_page_names_its_timing_method_in_words(tab: Any, base_url: str) -> None:  # noqa: F811
    tab.goto(base_url + "/operations/rope?gpu=a100")  # the reference view: its "Fastest verified" card is H200's
    href = tab.locator(".slot").filter(has_text="Fastest verified").locator("a", has_text="Run detail").first
    tab.goto(base_url + str(href.get_attribute("href")))
    text = tab.inner_text("main")
    assert "CUDA graph replay" in text and "cuda_graph_replay" not in text


AXE_PAGES = ["/gpus/h100?page=2", "/operations/rope?gpu=h100", "/search?q=rope+seq+2048+hidden+8192+on+h100"]


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("path", AXE_PAGES)
def test_axe_is_clean_on_the_new_states(browser: Any, base_url: str, path: str, scheme: str) -> None:  # noqa: F811
    from axe_playwright_python.sync_playwright import Axe

    width, height = WIDTHS["phone"]
    context = browser.new_context(viewport={"width": width, "height": height}, is_mobile=True, color_scheme=scheme)
    page = context.new_page()
    page.goto(base_url + path)
    results = Axe().run(page)
    context.close()
    serious = [(v["id"], [n["target"] for n in v["nodes"]][:3]) for v in results.response["violations"]
               if v.get("impact") in ("serious", "critical")]
    assert not serious, f"{path} ({scheme}): {serious}"


def test_search_ranking_shows_the_median_without_scrolling_on_a_phone(tab: Any, base_url: str) -> None:  # noqa: F811
    tab.goto(base_url + "/search?q=" + "RoPE, seq 2048, hidden 8192, bf16, on A100".replace(" ", "+"))
    table = tab.locator("table.ranked").first
    assert "Liger" in table.inner_text()
    median = table.locator("tbody td.num").first
    right = median.evaluate("e => e.getBoundingClientRect().right")
    assert right <= tab.viewport_size["width"], f"the median ends at {right} px"  # the rank cell stays narrow
