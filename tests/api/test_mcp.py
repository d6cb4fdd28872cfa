"""The MCP server, driven by the official SDK's own client: over stdio against ``ki mcp`` (a real
subprocess) and over streamable HTTP against ``/mcp`` on a live uvicorn server. Structured answers
must equal the REST answers field for field; bad input must be a tool error with the API's problem."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp import Client, StdioServerParameters

from kernelindex.catalog.db import Catalog

TOOLS = {"search_catalog", "resolve_kernel", "resolve_kernels", "get_operation", "get_implementation",
         "get_reproduction", "get_run_evidence", "compare_runs", "compare_implementations", "list_records",
         "list_gpus", "validate_manifest", "get_manifest_schema", "recommend_kernel", "list_changes", "get_model_step"}
ACCEPTANCE = ["rope seq=2048 hidden=8192 gpu:a100", "embedding vocab=1024", "rope seq=3000 hidden=8192 a100",
              "rope gpuu:a100"]
USE = ["rope seq=2048 hidden=8192 bf16 h200", "rope seq=2048 hidden=8192 bf16 a100",
       "rope seq=2048 hidden=8192 bf16 h100"]
BAD_STRUCTURED = {"operation": "rope", "gpu": "a1000"}
COMPARE = {"operation": "rope", "implementations": ["liger", "torch-compile"], "gpus": ["h200"]}


async def _session(target: Any) -> dict[str, Any]:
    """One client session: every call the tests look at, recorded."""
    out: dict[str, Any] = {}
    async with Client(target) as client:
        out["tools"] = {t.name: t for t in (await client.list_tools()).tools}
        out["resolve"] = {q: await client.call_tool("resolve_kernel", {"query": q}) for q in ACCEPTANCE}
        out["use"] = {q: await client.call_tool("recommend_kernel", {"query": q}) for q in USE}
        out["batch"] = await client.call_tool("resolve_kernels", {"queries": [*ACCEPTANCE, BAD_STRUCTURED]})
        out["bad_structured"] = await client.call_tool("resolve_kernel", {"request": BAD_STRUCTURED})
        out["bad_run"] = await client.call_tool("get_run_evidence", {"run_id": "not-hex"})
        out["unknown_run"] = await client.call_tool("get_run_evidence", {"run_id": "abcdef0123"})
        out["no_gpu"] = await client.call_tool("recommend_kernel", {"query": "rope seq=2048 hidden=8192"})
        out["gpus"] = await client.call_tool("list_gpus", {})
        out["operation_h100"] = await client.call_tool("get_operation", {"slug": "rope", "gpu": "h100"})
        out["compare"] = await client.call_tool("compare_implementations", COMPARE)
        first = await client.call_tool("list_changes", {"limit": 3})
        out["changes"] = [first, await client.call_tool("list_changes", {
            "since": first.structured_content["next_cursor"], "limit": 500})]
        out["bad_cursor"] = await client.call_tool("list_changes", {"since": "not a cursor"})
        out["bad_limit"] = await client.call_tool("list_changes", {"limit": 0})
        out["schema"] = await client.call_tool("get_manifest_schema", {"kind": "BenchmarkRun"})
        out["invalid_manifest"] = await client.call_tool("validate_manifest", {"manifest": {
            "apiVersion": "kernelindex/v1", "kind": "SoftwareProject", "spec": {"name": "x", "colour": 1}}})
        out["resources"] = [str(r.uri) for r in (await client.list_resources()).resources]
        out["floor_text"] = (await client.read_resource("kernelindex://policies/floor")).contents[0].text
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def live_url(catalog: Catalog) -> Iterator[str]:
    import uvicorn

    from kernelindex.web.app import create_app

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(catalog), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module", params=["stdio", "http"])
def session(request: pytest.FixtureRequest, catalog: Catalog) -> dict[str, Any]:
    if request.param == "stdio":
        target: Any = StdioServerParameters(command=sys.executable, env=dict(os.environ),
                                            args=["-m", "kernelindex.cli", "mcp", "--database", catalog.url])
    else:
        target = request.getfixturevalue("live_url")
    return asyncio.run(_session(target))


def test_every_tool_is_listed_with_a_schema_and_a_description(session: dict[str, Any]) -> None:
    assert set(session["tools"]) == TOOLS
    for tool in session["tools"].values():
        assert tool.input_schema["type"] == "object" and len(tool.description or "") > 120
    assert session["tools"]["recommend_kernel"].input_schema["required"] == ["query"]


def test_page_tools_take_their_views_parameters(session: dict[str, Any], api: TestClient) -> None:
    """Issue 48 item 3: a page's tool is generated from the view's declaration, so its arguments are the page's
    (get_operation has the page's ?gpu=, which the hand-written tool lacked) with the same patterns."""
    from kernelindex.views.table import VIEW
    from kernelindex.web.mcp_server.page_tools import PAGE_TOOLS

    for tool, name in PAGE_TOOLS.items():
        view = VIEW[name]
        declared = [*([view.subject] if view.subject else []), *view.query]
        schema = session["tools"][tool].input_schema
        assert list(schema["properties"]) == [p.name for p in declared], tool
        assert schema.get("required", []) == ([view.subject.name] if view.subject else []), tool
        for param in declared:
            text = str(schema["properties"][param.name])
            assert (param.pattern in text) or all(choice in text for choice in param.choices), (tool, param.name)
    answer = session["operation_h100"]
    assert not answer.is_error
    rest = api.get("/api/v1/operations/rope", params={"gpu": "h100"}).json()
    mine = {k: v for k, v in answer.structured_content.items() if k != "generated_for"}  # each door's own clock
    assert mine == {k: v for k, v in rest.items() if k != "generated_for"} and mine["asked_gpu"] == rest["asked_gpu"]


@pytest.mark.parametrize("query", ACCEPTANCE)
def test_resolve_equals_the_rest_answer(session: dict[str, Any], api: TestClient, query: str) -> None:
    result = session["resolve"][query]
    assert not result.is_error
    assert result.structured_content == api.get("/api/v1/search", params={"q": query}).json()
    assert result.content[0].text.startswith(result.structured_content["message"])


def test_batch_equals_the_rest_batch(session: dict[str, Any], api: TestClient) -> None:
    rest = api.post("/api/v1/resolve/batch", json={"queries": [*ACCEPTANCE, BAD_STRUCTURED]}).json()
    assert session["batch"].structured_content == rest
    assert rest["failed"] == 1


@pytest.mark.parametrize("query", USE)
def test_recommend_equals_ki_use_over_rest(session: dict[str, Any], api: TestClient, query: str) -> None:
    result = session["use"][query]
    assert not result.is_error
    assert result.structured_content == api.get("/api/v1/use", params={"q": query}).json()


def test_bad_input_is_a_tool_error_with_the_api_problem(session: dict[str, Any], api: TestClient) -> None:
    bad = session["bad_structured"]
    rest = api.post("/api/v1/resolve", json=BAD_STRUCTURED).json()
    assert bad.is_error and bad.structured_content["code"] == rest["code"] == "invalid_request"
    assert bad.structured_content["detail"] == rest["detail"]
    assert bad.structured_content["errors"][0]["suggestion"] == "a100"
    assert session["bad_run"].is_error and session["bad_run"].structured_content["code"] == "bad_request"
    unknown = session["unknown_run"]
    assert unknown.is_error and unknown.structured_content["code"] == "not_found"
    assert unknown.structured_content["detail"] == api.get("/api/v1/runs/abcdef0123").json()["detail"]
    no_gpu = session["no_gpu"]
    assert no_gpu.is_error and no_gpu.structured_content["detail"] == api.get(
        "/api/v1/use", params={"q": "rope seq=2048 hidden=8192"}).json()["detail"]


def test_catalog_tools_and_resources(session: dict[str, Any]) -> None:
    gpus = session["gpus"].structured_content
    assert "a100-80gb" in {g["gpu"]["slug"] for g in gpus["items"]}
    assert "properties" in session["schema"].structured_content["schema"]
    invalid = session["invalid_manifest"].structured_content
    assert invalid["valid"] is False and any("colour" in p for p in invalid["problems"])
    assert set(session["resources"]) == {"kernelindex://methodology", "kernelindex://policies/floor",
                                         "kernelindex://policies/ranking"}
    assert "floor = max(bytes / bandwidth, flops / peak, the GPU's minimum kernel time)" in session["floor_text"]


def test_list_changes_equals_the_rest_feed_and_follows_its_cursor(session: dict[str, Any], api: TestClient) -> None:
    first, rest_of_it = session["changes"]
    assert not first.is_error and not rest_of_it.is_error
    rest_first = api.get("/api/v1/changes", params={"limit": 3}).json()
    assert first.structured_content == rest_first
    assert rest_first["more"] is True and len(rest_first["changes"]) == 3
    rest_next = api.get("/api/v1/changes", params={"since": rest_first["next_cursor"], "limit": 500}).json()
    assert rest_of_it.structured_content == rest_next
    seen = {(c["kind"], c["id"]) for c in rest_first["changes"]}
    assert rest_next["changes"] and not seen & {(c["kind"], c["id"]) for c in rest_next["changes"]}
    assert first.content[0].text.startswith("3 changes (more follow")


def test_list_changes_errors_are_the_api_problems(session: dict[str, Any], api: TestClient) -> None:
    bad = session["bad_cursor"]
    rest = api.get("/api/v1/changes", params={"since": "not a cursor"})
    assert rest.status_code == 400 and bad.is_error
    assert bad.structured_content["code"] == rest.json()["code"] == "bad_cursor"
    assert bad.structured_content["detail"] == rest.json()["detail"]
    limit = session["bad_limit"]
    assert limit.is_error and limit.structured_content["code"] == "bad_request"
    assert limit.structured_content["errors"][0]["field"] == "limit"


def test_compare_implementations_equals_the_rest_answer(session: dict[str, Any], api: TestClient) -> None:
    """Issue 43 item 8: the sweep through MCP is the API's answer, field for field."""
    result = session["compare"]
    assert not result.is_error
    rest = api.get("/api/v1/compare", params={"operation": "rope", "impl": ["liger", "torch-compile"],
                                               "gpu": "h200"}).json()
    assert result.structured_content == rest and rest["mode"] == "sweep"
    assert result.content[0].text.startswith("rope · forward: Of 7 workloads")
