"""Compare by implementation (issue 43 item 8): two implementations, or two versions of one, on one or two
GPUs across an operation's workloads, as HTML, JSON and CSV from one view (the CLI and MCP forms are tested
with their doors: tests/cli_query/test_query_cmds.py, tests/api/test_mcp.py)."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pagetext import section, text_of

from kernelindex.views.tables import COMPARE_COLUMNS

LIGER_VS_COMPILE = {"operation": "rope", "impl": ["liger", "torch-compile"], "gpu": "h200"}


def _sweep(client: TestClient, params: dict[str, Any]) -> dict[str, Any]:
    answer = client.get("/api/v1/compare", params=params)
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert data["mode"] == "sweep" and data["runs"] == []
    return data["sweep"]


def test_one_gpu_compares_every_workload_from_the_ranked_rows(client: TestClient) -> None:
    sweep = _sweep(client, LIGER_VS_COMPILE)
    assert [s["label"] for s in sweep["series"]] == ["Liger · H200", "torch.compile · H200"]
    assert sweep["region"] == "forward" and sweep["regions"] == ["forward", "backward", "forward+backward"]
    assert len(sweep["rows"]) == 7
    facts = {f["field"]: f for f in sweep["facts"]}
    assert facts["timer"]["same"] and facts["timer"]["value"] == "stream time"
    assert facts["protocol"]["value"] == "kernelindex-runner v4" and facts["statistic"]["value"] == "median"
    for row in sweep["rows"]:
        # each cell is that implementation's row on the operation page of the workload on the H200
        page = client.get("/api/v1/operations/rope", params={"workload": row["workload"], "gpu": "h200"}).json()
        assert page["selected_cohort"].startswith(row["cells"][0]["cohort"]) and row["same_cohort"] and row["alike"]
        ranked = {r["implementation"]["slug"]: r for r in page["ranked"]}
        for cell, slug in zip(row["cells"], ("liger-kernel-rope", "torch-compile-rope"), strict=True):
            assert cell["time_ns"] == ranked[slug]["time_ns"] and cell["rank"] == ranked[slug]["rank_label"]
            assert cell["run"]["run_id"] == ranked[slug]["run_id"]
        fastest = min(c["time_ns"] for c in row["cells"])
        assert [c["multiple"] for c in row["cells"]] == [c["time_ns"] / fastest for c in row["cells"]]
    assert sweep["wins"] == [5, 0]  # the two longest sequences are tied at rank 1= in their cohorts
    assert sweep["summary"].startswith("Of 7 workloads where every series was measured alike: Liger · H200 is "
                                       "fastest in 5, torch.compile · H200 is fastest in 0; 2 tied.")


def test_two_gpus_say_what_timed_each_and_give_no_multiple(client: TestClient) -> None:
    sweep = _sweep(client, {"operation": "rope", "impl": "liger", "gpu": ["a100", "h200"]})
    assert [s["label"] for s in sweep["series"]] == ["Liger · A100", "Liger · H200"]
    facts = {f["field"]: f for f in sweep["facts"]}
    assert not facts["timer"]["same"] and facts["timer"]["by_series"] == [["triton.testing.do_bench"],
                                                                          ["stream time"]]
    assert facts["protocol"]["by_series"] == [["Liger-Kernel benchmark scripts"], ["kernelindex-runner v4"]]
    assert facts["statistic"]["same"] and facts["evidence"]["by_series"] == [["reported"], ["verified"]]
    assert all(not r["alike"] and r["fastest"] is None and r["note"].startswith("Timed differently (timer and "
                                                                                "protocol version)")
               and all(c["time_ns"] and c["multiple"] is None for c in r["cells"]) for r in sweep["rows"])
    assert sweep["summary"].startswith("No workload has every series measured alike")


def test_two_versions_of_one_implementation(client: TestClient) -> None:
    sweep = _sweep(client, {"operation": "rope", "impl": ["liger-kernel-rope@0.2.1", "liger@0.8.5"],
                            "gpu": ["a100", "h200"]})
    assert [s["label"] for s in sweep["series"]] == ["Liger 0.2.1 · A100", "Liger 0.2.1 · H200",
                                                     "Liger 0.8.5 · A100", "Liger 0.8.5 · H200"]
    versions = [{c["version"] for r in sweep["rows"] for c in r["cells"] if c["series"] == i} for i in range(4)]
    assert versions == [{"0.2.1"}, {None}, {None}, {"0.8.5"}]  # each version was measured on one GPU only
    assert "Liger 0.2.1 · H200: not measured on H200 (forward); it was on A100 (add gpu=…)." in sweep["summary"]
    alone = _sweep(client, {"operation": "rope", "impl": ["liger@0.2.1", "liger@0.8.5"]})
    assert [s["gpu"] for s in alone["series"]] == ["h200", "h200"]  # no GPU holds both: the default rule's


def test_the_page_shows_the_sweep_and_its_facts(client: TestClient) -> None:
    html = client.get("/compare", params=LIGER_VS_COMPILE).text
    text = text_of(html)
    assert "Rotary position embedding: Liger · H200 vs torch.compile · H200" in text
    assert "Timer stream time (same for all)" in text and "Statistic median (same for all)" in text
    table = section(text, "7 workloads × 2 series", "Compare implementations across")
    assert table.count("fastest") >= 5 + 2 and "Tied at rank 1= in their cohort." in table
    asked = "operation=rope&amp;impl=liger&amp;impl=torch-compile&amp;gpu=h200"
    assert f'href="/api/v1/compare?{asked}&amp;region=forward"' in html  # the twin of what is shown
    assert f'href="/compare?{asked}&amp;region=backward"' in html
    two = text_of(client.get("/compare", params={"operation": "rope", "impl": "liger",
                                                 "gpu": ["a100", "h200"]}).text)
    assert "Timer Liger · A100: triton.testing.do_bench · Liger · H200: stream time" in two


def test_the_csv_has_a_row_per_workload_and_series(client: TestClient) -> None:
    sweep = _sweep(client, LIGER_VS_COMPILE)
    answer = client.get("/api/v1/compare", params={**LIGER_VS_COMPILE, "format": "csv"})
    rows = list(csv.DictReader(io.StringIO(answer.text)))
    assert list(rows[0])[:len(COMPARE_COLUMNS)] == COMPARE_COLUMNS and len(rows) == 14
    first = sweep["rows"][0]
    assert [(r["series"], r["time_ns"], r["timer"], r["protocol"], r["statistic"]) for r in rows[:2]] == [
        (s["label"], str(c["time_ns"]), c["timer"], c["protocol"], c["statistic"])
        for s, c in zip(sweep["series"], first["cells"], strict=True)]
    assert all(r["source_license"] for r in rows)


@pytest.mark.parametrize(("params", "status", "words"), [
    ({"impl": ["liger", "torch-compile"]}, 400, "name the operation"),
    ({"operation": "rope", "impl": "liger"}, 400, "one implementation and two GPUs"),
    ({"operation": "rope", "impl": ["ligr", "torch-compile"]}, 404, "its implementations are liger-kernel-rope"),
    ({"operation": "rope", "impl": ["liger@9.9", "torch-compile"]}, 404, "its versions: 0.2.1, 0.8.5"),
    ({"operation": "rope", "impl": ["liger", "liger"]}, 400, "named twice"),
    ({"operation": "rope", "impl": ["liger", "torch-compile"], "gpu": "h300"}, 400, "no GPU 'h300'"),
    ({"operation": "rope", "impl": ["liger", "torch-compile", "transformers"]}, 400, None),
    ({"operation": "rope", "impl": ["liger", "torch-compile"], "region": "sideways"}, 400, None),
    ({"operation": "nope", "impl": ["liger", "torch-compile"]}, 404, "no operation 'nope'"),
    ({"run": "0123456789abcdef", "impl": ["liger", "torch-compile"], "operation": "rope"}, 400, "not both"),
    ({"run": ["0123456789abcdef", "0123456789abcdee"], "gpu": "h200"}, 400, "gpu goes with impl"),
])
def test_what_is_wrong_is_named(client: TestClient, params: dict[str, Any], status: int, words: str | None) -> None:
    answer = client.get("/api/v1/compare", params=params)
    assert answer.status_code == status, answer.text
    if words:
        assert words in answer.json()["detail"]
    assert client.get("/compare", params=params).status_code == status
