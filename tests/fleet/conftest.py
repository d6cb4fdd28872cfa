"""Fixtures for the write path: a catalog that trusts the shipped runner keys (or test keys), an app
over it, API keys of every scope, and a real server on a free port."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from fleet_helpers import free_port

from kernelindex.catalog.db import Catalog
from kernelindex.trust import keys as runner_keys
from kernelindex.trust.api_keys import create_key


@pytest.fixture
def fleet_catalog(empty_catalog: Catalog) -> Catalog:
    runner_keys.bundled_runner_keys(empty_catalog)  # trusts the shipped runner keys
    return empty_catalog


@pytest.fixture
def app(fleet_catalog: Catalog) -> Any:
    from kernelindex.web.app import create_app

    application = create_app(fleet_catalog)
    application.state.lease_seconds = 2.0
    return application


@pytest.fixture
def client(app: Any) -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture
def tokens(fleet_catalog: Catalog) -> dict[str, str]:
    return {scope: create_key(fleet_catalog, name=f"test-{scope.replace(':', '-')}", scope=scope,
                              created_by="pytest")[1]
            for scope in ("bundles:write", "requests:write", "admin")}


@pytest.fixture
def live_server(app: Any) -> Iterator[str]:
    """The app served by uvicorn on 127.0.0.1 in a thread (real HTTP, real concurrency)."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
