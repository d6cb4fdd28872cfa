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


def test_an_h100_page_without_h100_runs_offers_the_h200s_verified_runs(client: TestClient) -> None:
    """Issue 44 item 4: geglu-mlp has verified H200 runs, Liger's reported RTX 4090 rows and nothing on the H100.
    Its H100 page, the nearest-GPU banner and the "Use this" box all offer the H200's verified cohort."""
    page = client.get("/api/v1/operations/geglu-mlp", params={"gpu": "h100"}).json()
    nearest = page["asked_gpu"]["nearest"]
    assert nearest["gpu"] == "h200" and nearest["why"].startswith("the same architecture as H100 (sm_90), verified")
    linked = next(c for c in page["cohorts"] if c["key"] == nearest["cohort"])
    assert linked["evidence"] == "verified" and page["selected_cohort"] == nearest["cohort"]
    assert any(c["evidence"] == "reported" and "RTX 4090" in c["gpu"] for c in page["cohorts"])
    text = client.get("/operations/geglu-mlp?gpu=h100").text
    box = html.unescape(text[text.index('id="use-this"'):])
    box = box[:box.index("</section>")]
    assert "Use this on H200" in box and "Verified · KernelIndex verification runner" in box
    (answer,) = client.get(_json_link(text)).json()["recommendation"]["answers"]
    assert answer["evidence"] == "verified" and answer["median_ns"] == nearest["leader_ns"]


def test_a_hopper_gpu_without_runs_is_offered_hopper_verified_runs_first(client: TestClient) -> None:
    """Issue 44 item 4, for a GPU with no runs at all (the H100 PCIe): tvd's nearest measured GPU is the H200's verified
    lane, not the H100 SXM's reported Liger rows; rope's is a verified Hopper part, never the A100's reported rows. The
    banner, the selected cohort and the "Use this" box agree."""
    for operation, leader in (("tvd", "h200"), ("rope", None)):
        page = client.get(f"/api/v1/operations/{operation}", params={"gpu": "h100-pcie"}).json()
        nearest = page["asked_gpu"]["nearest"]
        assert nearest["why"].startswith("the same architecture as H100 PCIe (sm_90), verified"), nearest
        assert nearest["gpu"] in ({leader} if leader else {"h100-sxm", "h200"})
        assert page["selected_cohort"] == nearest["cohort"]
        assert next(c for c in page["cohorts"] if c["key"] == nearest["cohort"])["evidence"] == "verified"
        text = client.get(f"/operations/{operation}?gpu=h100-pcie").text
        (answer,) = client.get(_json_link(text)).json()["recommendation"]["answers"]
        assert answer["evidence"] == "verified" and answer["gpu"] == nearest["gpu"]
