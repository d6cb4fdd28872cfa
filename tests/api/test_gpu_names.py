"""One resolver for GPU names (issue 22 item 2): ``H200``, ``h200`` and ``H100 SXM`` work on every surface
— the page (an alias redirects, 308, to the canonical URL), the API (answers the canonical resource and
names it in Content-Location), the CLI and MCP — by search's alias table and its ambiguity rule."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp import Client
from typer.testing import CliRunner

from kernelindex import registry
from kernelindex.catalog.db import Catalog
from kernelindex.cli import app as ki
from kernelindex.web.mcp_server.server import build_server

NAMES = {"H200": "h200", "h200": "h200", "H100 SXM": "h100-sxm"}


@pytest.mark.parametrize(("name", "slug"), NAMES.items())
def test_the_gpu_page_redirects_an_alias_to_its_canonical_url(api: TestClient, name: str, slug: str) -> None:
    moved = api.get(f"/gpus/{name}", params={"page": "1", "utm_source": "x"}, follow_redirects=False)
    if name == slug:
        assert moved.status_code == 200
        return
    assert moved.status_code == 308 and moved.headers["location"] == f"/gpus/{slug}?page=1"
    page = api.get(f"/gpus/{name}")
    assert page.status_code == 200 and str(page.url).endswith(f"/gpus/{slug}")


@pytest.mark.parametrize(("name", "slug"), NAMES.items())
def test_the_api_answers_the_canonical_gpu(api: TestClient, name: str, slug: str) -> None:
    answer = api.get(f"/api/v1/gpus/{name}", follow_redirects=False)
    assert answer.status_code == 200 and answer.json()["gpu"]["slug"] == slug
    assert answer.json() == api.get(f"/api/v1/gpus/{slug}").json()
    assert answer.headers.get("content-location") == (None if name == slug else f"/api/v1/gpus/{slug}")


@pytest.mark.parametrize("name", NAMES)
def test_records_take_gpu_names_on_page_and_api(api: TestClient, name: str) -> None:
    canonical = api.get("/api/v1/records", params={"gpu": NAMES[name]}).json()
    named = api.get("/api/v1/records", params={"gpu": name})
    assert named.status_code == 200, named.text
    assert named.json()["cohorts"] == canonical["cohorts"] and named.json()["filters"]["gpu"] == NAMES[name]
    assert api.get("/records", params={"gpu": name}).status_code == 200


def test_an_ambiguous_name_follows_search_and_says_so(api: TestClient) -> None:
    """"H100" is the SXM part, and runs whose source wrote only "NVIDIA H100" may be it: included, said."""
    assert registry.gpu_slug("H100") == "h100-sxm"
    page = api.get("/api/v1/records", params={"gpu": "H100"}).json()
    assert "variant not recorded" in page["gpu_reading"] and "NVIDIA H100 SXM 80GB" in page["gpu_reading"]
    assert registry.gpus_answering("h100-sxm") == ("h100-sxm", "h100-variant-not-recorded")
    assert {c["gpu"] for c in page["cohorts"]} <= {"h100-sxm", "h100-variant-not-recorded"}
    assert "data-gpu-reading" in api.get("/records", params={"gpu": "H100"}).text
    assert api.get("/api/v1/records", params={"gpu": "h200"}).json()["gpu_reading"] is None
    assert "/gpus/h100-variant-not-recorded" in api.get("/gpus/H100").text


def test_an_unknown_gpu_name_is_still_refused(api: TestClient) -> None:
    assert api.get("/api/v1/gpus/H999").status_code == 404
    assert api.get("/api/v1/records", params={"gpu": "H999"}).status_code == 400


@pytest.mark.parametrize(("name", "slug"), NAMES.items())
def test_the_cli_takes_gpu_names(catalog: Catalog, name: str, slug: str) -> None:
    runner = CliRunner()
    shown = runner.invoke(ki, ["show", "gpu", name, "--json", "--database", catalog.url])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["gpu"]["slug"] == slug
    records = runner.invoke(ki, ["records", "--gpu", name, "--json", "--database", catalog.url])
    assert records.exit_code == 0, records.output
    assert json.loads(records.stdout)["filters"]["gpu"] == slug


def test_mcp_list_records_takes_gpu_names(catalog: Catalog) -> None:
    async def calls() -> dict[str, Any]:
        async with Client(build_server(catalog)) as client:
            schema = {t.name: t for t in (await client.list_tools()).tools}["list_records"].input_schema
            answers = {n: await client.call_tool("list_records", {"gpu": n}) for n in [*NAMES, *NAMES.values()]}
            return {"schema": schema, "answers": answers}

    out = asyncio.run(calls())
    patterns = list(_patterns(out["schema"]["properties"]["gpu"]))
    assert patterns and all(re.fullmatch(p, n) for p in patterns for n in NAMES)
    for name, slug in NAMES.items():
        result = out["answers"][name]
        assert not result.is_error, result.content
        canonical = out["answers"][slug].structured_content
        assert {**result.structured_content, "gpu_reading": None} == {**canonical, "gpu_reading": None}
        assert result.structured_content["filters"]["gpu"] == slug and result.structured_content["cohorts"]


def _patterns(schema: Any) -> Any:
    if isinstance(schema, dict):
        yield from ([schema["pattern"]] if "pattern" in schema else [])
        for value in schema.values():
            yield from _patterns(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _patterns(value)
