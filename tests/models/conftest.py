"""A small catalog for the model pages (issue 49): only the bundled verified runs (~20 s to import once), which
hold the Llama 3.1 8B GEMM and attention definitions measured on H200 and the Liger operations."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from kernelindex.catalog.db import Catalog, open_catalog

PINNED = datetime(2026, 11, 29, tzinfo=UTC)


@pytest.fixture(scope="session")
def verified_catalog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Catalog]:
    from kernelindex.bootstrap import ensure_bundled_data

    path: Path = tmp_path_factory.mktemp("models") / "verified.sqlite"
    catalog = open_catalog(f"sqlite:///{path}")
    ensure_bundled_data(catalog, parts=("verified",))
    yield catalog
    catalog.dispose()


@pytest.fixture(scope="session")
def model_site(verified_catalog: Catalog) -> Iterator[TestClient]:
    from kernelindex.web.app import create_app

    with TestClient(create_app(verified_catalog, clock=lambda: PINNED)) as client:
        yield client
