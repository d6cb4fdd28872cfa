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


def rope_keys_of(catalog: Catalog) -> dict[str, str]:
    """Ids the tests navigate by, read from the read model (digests move when manifests change)."""
    from kernelindex.readmodel.operations import operation_page

    default = operation_page(catalog, "rope", now=FIXED_NOW)
    source = next(c for c in default.cohorts if c.native and c.mode == "forward")  # Liger's A100 forward cohort
    page = operation_page(catalog, "rope", workload=default.selected_workload, cohort=source.key, now=FIXED_NOW)
    return {"leader": page.ranked[0].run_id, "second": page.ranked[1].run_id, "baseline": page.ranked[2].run_id,
            "cohort": page.selected_cohort or "", "workload": page.selected_workload or ""}


@pytest.fixture(scope="session")
def rope_keys(catalog: Catalog) -> dict[str, str]:
    return rope_keys_of(catalog)


def source_cohort_url(client: TestClient, slug: str) -> str:
    """The operation page on the source's (Liger's) forward cohort of the default workload: the cohort the
    reference pages show. With two runner identities shipped, the default is the replicated H200 cohort."""
    page = client.get(f"/api/v1/operations/{slug}").json()
    cohort = next(c for c in page["cohorts"] if c["native"] and c["mode"] == "forward")
    return f"/operations/{slug}?workload={page['selected_workload']}&cohort={cohort['key']}"
