"""Fixtures for the write path: a catalog that trusts the shipped runner keys (or test keys), an app
over it, API keys of every scope, and a real server on a free port."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import datetime, tzinfo
from typing import Any

import pytest
from fastapi.testclient import TestClient
from fleet_helpers import LeaseClock, free_port

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


@pytest.fixture
def lease_clock(monkeypatch: pytest.MonkeyPatch) -> LeaseClock:
    """Injects a movable "now" where leases are granted, compared and listed (catalog/requests.py and the
    listing readmodel/requests.py keeps), so a lapsed lease is a step of the test, not a 2 s sleep."""
    from kernelindex.catalog import requests as stored
    from kernelindex.readmodel import requests as listing

    clock = LeaseClock()

    class AnyDatetime(type):
        def __instancecheck__(cls, instance: object) -> bool:  # isinstance(x, datetime) holds as before
            return isinstance(instance, datetime)

    class Shifted(datetime, metaclass=AnyDatetime):
        @classmethod
        def now(cls, tz: tzinfo | None = None) -> datetime:
            return datetime.now(tz) + clock.offset

    monkeypatch.setattr(stored, "datetime", Shifted)
    monkeypatch.setattr(listing, "datetime", Shifted)
    return clock
