"""Agent routes: POST /api/v1/resolve/batch and GET /api/v1/use, over the real bundled catalog."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from fastapi.testclient import TestClient

ROPE_H200 = "rope seq=2048 hidden=8192 bf16 h200"


def _answer(data: dict) -> dict:
    return {k: v for k, v in data.items() if k != "query"}


def test_batch_answers_in_order_each_as_its_single_route(api: TestClient) -> None:
    structured = {"operation": "rope", "axes": {"seq": 2048, "hidden": 8192}, "gpu": "a100"}
    queries = ["rope seq=2048 hidden=8192 gpu:a100", structured, "embedding vocab=1024", "rope gpuu:a100"]
    data = api.post("/api/v1/resolve/batch", json={"queries": queries}).json()
    assert (data["count"], data["answered"], data["failed"]) == (4, 4, 0)
    assert [a["index"] for a in data["answers"]] == [0, 1, 2, 3]
    assert [a["kind"] for a in data["answers"]] == ["text", "structured", "text", "text"]
    for query, answer in zip(queries, data["answers"], strict=True):
        single = (api.get("/api/v1/search", params={"q": query}) if isinstance(query, str)
                  else api.post("/api/v1/resolve", json=query)).json()
        assert answer["status"] == 200 and answer["problem"] is None
        assert answer["result"] == single
    assert _answer(data["answers"][0]["result"]) == _answer(data["answers"][1]["result"])


def test_one_bad_query_does_not_fail_the_batch(api: TestClient) -> None:
    queries = ["rope seq=2048 hidden=8192 a100", {"operation": "rope", "gpu": "a1000"}, {"operation": "rope",
               "colour": "red"}, "x" * 501, "embedding vocab=1024"]
    response = api.post("/api/v1/resolve/batch", json={"queries": queries})
    assert response.status_code == 200
    answers = response.json()["answers"]
    assert [a["status"] for a in answers] == [200, 422, 422, 422, 200]
    typo = answers[1]["problem"]
    assert typo["code"] == "invalid_request" and typo["title"] == "Request does not validate"
    assert typo["errors"][0]["field"] == "queries[1].gpu" and typo["errors"][0]["suggestion"] == "a100"
    single = api.post("/api/v1/resolve", json=queries[1]).json()
    assert typo["detail"] == single["detail"] and typo["code"] == single["code"]
    assert "colour" in answers[2]["problem"]["detail"]
    assert "at most 500" in answers[3]["problem"]["detail"]
    assert answers[4]["result"]["operation"]["slug"] == "embedding"


def test_batch_is_bounded_at_fifty(api: TestClient) -> None:
    assert api.post("/api/v1/resolve/batch", json={"queries": ["rope"] * 50}).status_code == 200
    refused = api.post("/api/v1/resolve/batch", json={"queries": ["rope"] * 51})
    assert refused.status_code == 422 and refused.json()["code"] == "invalid_request"
    assert api.post("/api/v1/resolve/batch", json={"queries": []}).status_code == 422


def test_use_on_h200_names_the_verified_liger_run(api: TestClient) -> None:
    data = api.get("/api/v1/use", params={"q": ROPE_H200}).json()
    assert data["status"] == "measured"
    (answer,) = data["recommendation"]["answers"]
    # two trusted runner identities ship H200 bundles: the leader is verified, or replicated when they agree
    assert answer["evidence"] in ("verified", "replicated") and answer["cohort_kind"] == "verified+default"
    assert answer["implementation"]["title"] == "Liger" and answer["gpu"] == "h200"
    assert answer["install"].startswith('pip install "liger-kernel==')
    snippet = answer["snippet"]
    compile(snippet, "<snippet>", "exec")
    assert "from liger_kernel.transformers.rope import liger_rotary_pos_emb" in snippet
    assert 'q = torch.randn((1, 32, 2048, 256), dtype=torch.bfloat16, device="cuda")' in snippet
    assert "q_out, k_out = liger_rotary_pos_emb(q, k, cos, sin)" in snippet
    assert answer["floor_ratio"] > 1 and answer["run_url"] == f"/runs/{answer['run_id']}"


def test_use_on_a100_names_the_reported_liger_021_run(api: TestClient) -> None:
    rec = api.get("/api/v1/use", params={"q": "rope seq=2048 hidden=8192 bf16 a100"}).json()["recommendation"]
    (answer,) = rec["answers"]
    assert (answer["evidence"], answer["median_ns"], answer["cohort_kind"]) == ("reported", 59184, "default")
    assert answer["install"] == 'pip install "liger-kernel==0.2.1"'
    assert answer["floor_ratio"] == 1.3953 or abs(answer["floor_ratio"] - 1.40) < 0.01
    assert "time zone not recorded" in answer["evidence_line"]


def test_use_on_h100_answers_with_the_h100_lane(api: TestClient) -> None:
    """Issue 44: rope is verified on the H100 now; the answer is Liger's H100 stream time, over its floor."""
    data = api.get("/api/v1/use", params={"q": "rope seq=2048 hidden=8192 bf16 h100"}).json()
    rec = data["recommendation"]
    assert data["status"] == rec["status"] == "measured"
    best = rec["answers"][0]
    assert best["implementation"]["slug"] == "liger-kernel-rope" and 28_000 < best["median_ns"] < 34_000
    assert rec["floor"]["gpu"] == "h100-sxm" and rec["floor"]["floor_ns"] < best["median_ns"]


def test_use_on_an_unmeasured_gpu_says_not_measured_with_nearest_evidence_and_floor(api: TestClient) -> None:
    # The H100 SXM has verified GEMMs since 2026-12-07; the H100 PCIe (Hopper too) has none.
    data = api.get("/api/v1/use", params={"q": "gemm-n5120-k2048 m=128 h100-pcie"}).json()
    rec = data["recommendation"]
    assert data["status"] == rec["status"] == "not_measured_on_gpu" and rec["answers"] == []
    assert "Not measured on H100 PCIe" in data["message"]
    # Issue 20 item 9: the nearest measured GPU is the same architecture (sm_90) before a nearer bandwidth; of the
    # two Hopper GPUs with verified runs, the newer observation (the H100 SXM's)
    assert rec["nearest"]["gpu"] == "h100-sxm" and rec["nearest"]["answers"]
    assert rec["floor"]["gpu"] == "h100-pcie" and rec["floor"]["estimate"] is True


def test_use_lists_workloads_when_the_query_names_several(api: TestClient) -> None:
    data = api.get("/api/v1/use", params={"q": "rope a100"}).json()
    assert data["status"] == "choose_workload" and data["recommendation"] is None
    assert "op:rope seq=2048 hidden=8192 q_heads=32 kv_heads=8 dtype:bf16 gpu:a100-80gb" in [
        c["query"] for c in data["choices"]]
    between = api.get("/api/v1/use", params={"q": "rope seq=3000 hidden=8192 a100"}).json()
    assert between["status"] == "no_exact_workload"
    assert [c["value"] for c in between["choices"]] == [2048, 4096]
    assert "gpu:a100-80gb" in between["choices"][0]["query"]


def test_use_without_a_gpu_is_a_problem(api: TestClient) -> None:
    response = api.get("/api/v1/use", params={"q": "rope seq=2048 hidden=8192"})
    assert response.status_code == 400 and response.json()["code"] == "bad_request"
    assert "Name a GPU" in response.json()["detail"]


def test_use_with_a_misspelt_gpu_says_what_was_not_understood(api: TestClient) -> None:
    problem = api.get("/api/v1/use", params={"q": "rope seq=2048 hidden=8192 gpuu:a100"}).json()
    assert problem["code"] == "bad_request" and "did you mean 'gpu:'" in problem["detail"]
    assert {"field": "q", "value": "gpuu:a100", "suggestion": "gpu:a100"}.items() <= problem["errors"][1].items()


def test_batch_and_use_answer_with_the_apps_clock(catalog: Any, api: TestClient) -> None:
    """Pinned to 2030 every run is stale (> 180 days): the batch says so as /search and /resolve do, and
    answers cached for today's clock are not served for 2030's."""
    from kernelindex.web.app import create_app

    query = "rope seq=2048 hidden=8192 bf16 h200"
    structured = {"operation": "rope", "axes": {"seq": 2048, "hidden": 8192}, "dtype": "bf16", "gpu": "h200"}
    today = api.post("/api/v1/resolve/batch", json={"queries": [query, structured]}).json()["answers"]
    assert not today[0]["result"]["exact"][0]["leader"]["stale"]
    with TestClient(create_app(catalog, clock=lambda: datetime(2030, 6, 1, tzinfo=UTC))) as pinned:
        answers = pinned.post("/api/v1/resolve/batch", json={"queries": [query, structured]}).json()["answers"]
        assert answers[0]["result"] == pinned.get("/api/v1/search", params={"q": query}).json()
        assert answers[1]["result"] == pinned.post("/api/v1/resolve", json=structured).json()
        for answer in answers:
            assert all(row["stale"] for c in answer["result"]["exact"] for row in c["rows"])


def test_a_full_batch_of_the_longest_queries_is_not_too_large(api: TestClient) -> None:
    """The schema allows 50 queries of 500 characters; the body limit must too (a 413 for a schema-valid
    batch would be the server refusing what its contract promises)."""
    queries = ["rope " + "é" * 495] * 50
    response = api.post("/api/v1/resolve/batch", content=json.dumps({"queries": queries}),  # escaped: ~150 KB
                        headers={"content-type": "application/json"})
    assert response.status_code == 200 and response.json()["count"] == 50


def test_the_structured_request_schema_says_what_the_resolver_refuses(api_app: Any) -> None:
    schema = api_app.openapi()["components"]["schemas"]["ResolveRequest"]["properties"]
    assert schema["axes"]["propertyNames"]["pattern"] == "^[a-z][a-z0-9_]{0,39}$"
    assert schema["axes"]["additionalProperties"] is False
    assert all(schema[f]["anyOf"][0]["pattern"] == r"\S" for f in ("operation", "dtype", "gpu", "mode"))
