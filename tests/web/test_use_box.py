"""The operation page's "Use this" box: the read model's recommendation for the selected cohort, the
same answer as GET /api/v1/use (its JSON twin, linked from the box)."""

from __future__ import annotations

import html
import re

from fastapi.testclient import TestClient


def _json_link(page: str) -> str:
    box = page[page.index('id="use-this"'):]
    return html.unescape(re.search(r'href="(/api/v1/use\?q=[^"]+)"', box).group(1))  # type: ignore[union-attr]


def test_rope_page_says_what_to_run_on_the_selected_gpu(client: TestClient) -> None:
    page = client.get("/operations/rope?gpu=a100").text
    assert "Use this on A100" in page
    box = html.unescape(page[page.index('id="use-this"'):page.index('id="by-language"')])
    assert 'pip install "liger-kernel==0.2.1"' in box
    assert "q_out, k_out = liger_rotary_pos_emb(q, k, cos, sin)" in box
    assert "above the physical floor" in box and "Reported · Liger-Kernel benchmarks" in box
    # The floor is named as the operation page names it (issue 20): never a bare "floor".
    assert "A100 physical floor: " in box and "A100 floor:" not in box


def test_the_box_links_its_json_twin_with_the_same_answer(client: TestClient) -> None:
    page = client.get("/operations/rope?gpu=a100").text
    twin = client.get(_json_link(page)).json()
    (answer,) = twin["recommendation"]["answers"]
    assert f'href="/runs/{answer["run_id"]}"' in page[page.index('id="use-this"'):]
    assert twin["status"] == "measured" and answer["median_ns"] == 59184
