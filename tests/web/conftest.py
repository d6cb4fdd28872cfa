"""Fixtures for the website tests: the app over the shared ``catalog`` fixture (the bundled real
data on a SQLite file, and on PostgreSQL too when KERNELINDEX_TEST_DATABASE_URL is set), with the
clock pinned so staleness and "last observed" are stable."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from web_helpers import make_app, rope_keys_of

from kernelindex.catalog.db import Catalog


@pytest.fixture(scope="session")
def app(catalog: Catalog) -> Any:
    return make_app(catalog)


@pytest.fixture(scope="session")
def client(app: Any) -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def rope_keys(catalog: Catalog) -> dict[str, str]:
    return rope_keys_of(catalog)
