"""An app and a client over the shared bundled catalog (tests/conftest.py's ``catalog``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kernelindex.catalog.db import Catalog


@pytest.fixture(scope="session")
def api_app(catalog: Catalog) -> Any:
    from kernelindex.web.app import create_app

    return create_app(catalog)


@pytest.fixture(scope="session")
def api(api_app: Any) -> Iterator[TestClient]:
    with TestClient(api_app) as client:
        yield client
