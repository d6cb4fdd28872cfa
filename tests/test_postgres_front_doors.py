"""One PostgreSQL smoke test per front door (issue 47): the website, the JSON API, the ``ki`` query commands
and the MCP server each answer from the bundled catalog on PostgreSQL, and show the leader the read model
computes there. Everything those doors render from the read model is tested on SQLite; what SQL changes
(the catalog layer, publication, summaries, leases, read-model loading) runs on both backends
(tests/conftest.py's POSTGRES_PATHS)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from kernelindex.catalog.db import Catalog

pytestmark = pytest.mark.backends("postgresql")


@pytest.fixture(scope="module")
def leader(catalog: Catalog, now: datetime) -> str:
    """The run the read model ranks first in rope's default cohort, on this catalog."""
    from kernelindex.readmodel.operations import operation_page

    page = operation_page(catalog, "rope", now=now)
    assert page.ranked, "rope has no ranked run"
    return str(page.ranked[0].run_id)


@pytest.fixture(scope="module")
def now() -> datetime:
    return datetime(2026, 11, 29, tzinfo=UTC)


@pytest.fixture(scope="module")
def client(catalog: Catalog, now: datetime) -> Any:
    from kernelindex.web.app import create_app

    with TestClient(create_app(catalog, clock=lambda: now)) as test_client:
        yield test_client


def test_the_website(client: TestClient, leader: str) -> None:
    page = client.get("/operations/rope")
    assert page.status_code == 200
    assert f"/runs/{leader}" in page.text
    assert client.get(f"/runs/{leader}").status_code == 200


def test_the_json_api(client: TestClient, leader: str) -> None:
    page = client.get("/api/v1/operations/rope")
    assert page.status_code == 200
    assert leader in json.dumps(page.json())
    run = client.get(f"/api/v1/runs/{leader}")
    assert run.status_code == 200 and leader in json.dumps(run.json())


def test_the_cli(catalog: Catalog, leader: str) -> None:
    from kernelindex.cli import app as ki

    result = CliRunner().invoke(ki, ["show", "operation", "rope", "--json", "--database", catalog.url])
    assert result.exit_code == 0, result.output
    assert leader in result.output


def test_the_mcp_server(catalog: Catalog, leader: str) -> None:
    from mcp import Client, StdioServerParameters

    async def ask() -> Any:
        target = StdioServerParameters(command=sys.executable, env=dict(os.environ),
                                       args=["-m", "kernelindex.cli", "mcp", "--database", catalog.url])
        async with Client(target) as session:
            return await session.call_tool("get_operation", {"slug": "rope"})

    answer = asyncio.run(ask())
    assert not answer.is_error, answer
    assert leader in json.dumps(answer.structured_content)
