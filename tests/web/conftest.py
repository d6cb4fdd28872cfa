"""Fixtures for the website tests: the app over the shared ``catalog`` fixture (the bundled real
data on a SQLite file, and on PostgreSQL too when KERNELINDEX_TEST_DATABASE_URL is set), with the
clock pinned so staleness and "last observed" are stable."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kernelindex.catalog.db import Catalog

FIXED_NOW = datetime(2026, 11, 29, tzinfo=UTC)


def make_app(catalog: Catalog) -> Any:
    from kernelindex.web.app import create_app

    return create_app(catalog, clock=lambda: FIXED_NOW)


@pytest.fixture(scope="session")
def app(catalog: Catalog) -> Any:
    return make_app(catalog)


@pytest.fixture(scope="session")
def client(app: Any) -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client
