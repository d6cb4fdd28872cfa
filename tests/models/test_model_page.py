"""Issue 49's acceptance: /models/llama-3.1-8b?gpu=h200&phase=decode&batch=32&seq=4096&tp=1 lists every call
with its shapes, maps each to a catalog operation, shows the step's estimate and floor; the same answer through
JSON, CSV, ``ki model`` and the MCP tool."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from datetime import UTC, datetime

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from kernelindex import urls
from kernelindex.catalog.db import Catalog

QUERY = {"gpu": "h200", "phase": "decode", "batch": "32", "seq": "4096", "tp": "1"}
PAGE = urls.model("llama-3.1-8b")
PINNED = datetime(2026, 11, 29, tzinfo=UTC)  # the site's clock in conftest.py


def _twin(site: TestClient, **extra: str) -> dict:
    answer = site.get(urls.api(PAGE), params={**QUERY, **extra})
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_every_call_is_listed_mapped_and_summed(model_site: TestClient) -> None:
    data = _twin(model_site)
    calls = {c["name"]: c for c in data["calls"]}
    assert calls["attn.qkv_proj"]["shape"] == {"M": 32, "N": 6144, "K": 4096}
    assert calls["mlp.down_proj"]["shape"] == {"M": 32, "N": 4096, "K": 14336}
    for call in data["calls"]:
        assert call["status"] in ("exact", "nearest", "other_gpu", "not_measured", "no_operation")
        if call["status"] != "no_operation":
            assert call["operation"]["slug"], call["name"]
        assert call["floor_ns"] > 0, call["name"]
        if call["status"] == "nearest":  # named as such, with what differs
            assert call["differs"] and call["workload"]["key"]
        if call["status"] in ("other_gpu", "not_measured", "nearest"):  # one click (or one request) to ask
            assert call["ask_url"] or call["ask_request"], call["name"]
    gemm = calls["attn.qkv_proj"]
    assert gemm["operation"]["slug"] == "gemm-n6144-k4096" and gemm["answer"]["evidence"] == "verified"
    assert gemm["statistic"] == "median" and gemm["ratio"] > 1
    assert calls["lm_head"]["status"] == "no_operation"  # gemm-n128256-k4096 is not in the catalog: said so
    assert calls["lm_head"]["floor_ns"] > 0 and "no catalog definition" in calls["lm_head"]["floor"]["note"]
    summary = data["summary"]
    assert summary["estimate_ns"] > 0 and summary["floor_ns"] > summary["covered_floor_ns"] > 0
    assert summary["no_floor"] == [] and summary["floor_ns"] == sum(c["step_floor_ns"] for c in data["calls"])
    assert summary["estimate_ns"] == sum(c["step_ns"] for c in data["calls"] if c["step_ns"] is not None)
    assert summary["verified_ns"] + summary["reported_ns"] == summary["estimate_ns"]
    assert summary["label"] == "estimate, not evidence" and "median" in summary["statistic_note"]
    assert [g["gap_ns"] for g in data["gaps"]] == sorted((g["gap_ns"] for g in data["gaps"]), reverse=True)


def test_the_page_shows_it(model_site: TestClient) -> None:
    page = model_site.get(PAGE, params=QUERY)
    assert page.status_code == 200
    data = _twin(model_site)
    for call in data["calls"]:
        assert f'data-call="{call["name"]}"' in page.text
    assert data["summary"]["estimate"] in page.text and data["summary"]["floor"] in page.text
    assert "estimate, not evidence" in page.text


def test_the_csv_has_one_row_per_call(model_site: TestClient) -> None:
    answer = model_site.get(urls.api(PAGE), params={**QUERY, "format": "csv"})
    rows = list(csv.DictReader(io.StringIO(answer.text)))
    data = _twin(model_site)
    assert [r["call"] for r in rows] == [c["name"] for c in data["calls"]]
    qkv = next(r for r in rows if r["call"] == "attn.qkv_proj")
    assert qkv["shape"] == "M=32 · N=6144 · K=4096" and qkv["source"] == "kernelindex-runner"
    assert qkv["source_license"]


def test_ki_model_gives_the_same_answer(model_site: TestClient, verified_catalog: Catalog) -> None:
    from kernelindex.cli import app as ki

    result = CliRunner().invoke(ki, ["model", "llama-3.1-8b", "--gpu", "h200", "--decode", "--batch", "32",
                                     "--ctx", "4096", "--tp", "1", "--json", "--database", verified_catalog.url])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    twin = _twin(model_site)
    assert printed["calls"] == twin["calls"] and printed["summary"] == twin["summary"]
    table = CliRunner().invoke(ki, ["model", "llama-3.1-8b", "--gpu", "h200", "--decode", "--ctx", "4096",
                                    "--database", verified_catalog.url], env={"COLUMNS": "220"})
    assert table.exit_code == 0 and "attn.qkv_proj" in table.output and "Step estimate on H200" in table.output
    unknown = CliRunner().invoke(ki, ["model", "llama-9b", "--database", verified_catalog.url])
    assert unknown.exit_code == 1 and "no model 'llama-9b'" in unknown.output


def test_the_mcp_tool_gives_the_same_answer(model_site: TestClient, verified_catalog: Catalog) -> None:
    from kernelindex.web.mcp_server.server import build_server
    server = build_server(verified_catalog, clock=lambda: PINNED)
    tools = {t.name: t for t in asyncio.run(server.list_tools())}
    assert "get_model_step" in tools
    result = asyncio.run(server.call_tool("get_model_step", {"model": "llama-3.1-8b", "gpu": "h200",
                                                             "phase": "decode", "batch": 32, "seq": 4096, "tp": 1}))
    structured = result.structured_content if hasattr(result, "structured_content") else result[1]
    assert structured == _twin(model_site)


def test_bad_steps_are_clear_errors(model_site: TestClient) -> None:
    assert model_site.get(urls.api(urls.model("llama-9b"))).status_code == 404
    bad = model_site.get(urls.api(PAGE), params={**QUERY, "tp": "3"})
    assert bad.status_code == 400 and "not divisible by the tensor-parallel degree 3" in bad.text
    assert model_site.get(urls.api(PAGE), params={**QUERY, "phase": "sample"}).status_code == 400
    assert model_site.get(urls.api(urls.MODELS)).json()["models"][0]["source"]["url"].endswith("config.json")


def test_challenges_list_the_unmeasured_calls_of_popular_models_most_step_time_first(model_site: TestClient) -> None:
    data = model_site.get(urls.api(urls.CHALLENGES)).json()
    calls = data["model_calls"]
    assert calls and all(c["status"] in ("other_gpu", "not_measured", "no_operation") for c in calls)
    floors = [c["step_floor_ns"] for c in calls if c["step_floor_ns"] is not None]
    assert floors == sorted(floors, reverse=True)
    top = calls[0]
    assert top["model_url"].startswith(urls.model(top["model"]))
    page = model_site.get(urls.CHALLENGES)
    assert 'id="model-calls"' in page.text and top["call"] in page.text


def test_a_call_whose_workload_the_catalog_does_not_hold_is_one_click_from_an_ask(model_site: TestClient) -> None:
    calls = {c["name"]: c for c in _twin(model_site)["calls"]}
    ask = calls["input_layernorm"]["ask_url"]  # rms-norm rows=32: no run, no workload yet
    assert ask and "axes=" in ask and calls["input_layernorm"]["ask_request"]["axes"] == {"rows": 32, "hidden": 4096}
    form = model_site.get(ask)
    assert form.status_code == 200 and "hidden = 4096 · rows = 32" in form.text
    assert 'name="axes" value="hidden=4096,rows=32"' in form.text and 'name="dtypes" value="T=bf16"' in form.text
    wrong = model_site.get(urls.ask("rms-norm", "", "h200", "rows=0,hidden=4096", "T=bf16"))
    assert wrong.status_code == 404 and "rows" in wrong.text
