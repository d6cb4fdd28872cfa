"""Fixtures for the website tests: a real catalog with the bundled Liger data, an app, a client.

SQLite file in a temporary directory always; PostgreSQL as well when
KERNELINDEX_TEST_DATABASE_URL is set (the ``site_catalog`` fixture is parametrised over both).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kernelindex.catalog.db import Catalog, drop_everything, open_catalog

PG_ENV = "KERNELINDEX_TEST_DATABASE_URL"
BACKENDS = ["sqlite"] + (["postgresql"] if os.environ.get(PG_ENV) else [])
# Staleness and "last observed" use an injectable clock: pages in tests are rendered "as of" this.
FIXED_NOW = datetime(2026, 1, 15, tzinfo=UTC)


def _load_bundled(catalog: Catalog) -> None:
    from kernelindex.sources.liger import import_liger

    import_liger(catalog, dry_run=False, actor="tests")


@pytest.fixture(scope="session", params=BACKENDS)
def site_catalog(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Catalog]:
    if request.param == "postgresql":
        catalog = open_catalog(os.environ[PG_ENV], migrate_schema=False)
        drop_everything(catalog)
        catalog = open_catalog(os.environ[PG_ENV])
    else:
        path = tmp_path_factory.mktemp("web-catalog") / "catalog.sqlite"
        catalog = open_catalog(f"sqlite:///{path}")
    _load_bundled(catalog)
    yield catalog
    catalog.engine.dispose()


@pytest.fixture(scope="session")
def app(site_catalog: Catalog) -> Any:
    from kernelindex.web.app import create_app

    return create_app(site_catalog)


@pytest.fixture(scope="session")
def client(app: Any) -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client
