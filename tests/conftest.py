"""Shared fixtures: real catalogs on a real SQLite file, and on PostgreSQL when
KERNELINDEX_TEST_DATABASE_URL is set (each catalog gets its own schema, so parallel tests and
other users of the database never see each other's tables)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from kernelindex.catalog.db import Catalog, normalize_url, open_catalog

PG_URL = os.environ.get("KERNELINDEX_TEST_DATABASE_URL")
# What the session ``catalog`` fixture, and every bootstrap a test or its ``ki`` subprocess makes without
# naming parts, imports: Liger, the export and the verified bundles (~14,000 runs). A fresh install imports
# every bundled source (aiter and KernelBench too, ~80,700 runs); tests/web/test_every_source.py imports
# those once per backend and checks the site-wide pages with them.
TEST_PARTS = ("liger", "export", "verified")
os.environ["KERNELINDEX_BUNDLED_PARTS"] = ",".join(TEST_PARTS)
# PostgreSQL stays in every count: without the variable its tests are reported as skipped, with the reason.
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.skipif(
    not PG_URL, reason="PostgreSQL tests need KERNELINDEX_TEST_DATABASE_URL "
    "(e.g. postgresql://postgres@127.0.0.1:5432/test)"))]
NOW = datetime(2026, 11, 29, tzinfo=UTC)


@pytest.fixture
def now() -> datetime:
    """The injectable clock: staleness and 'last observed' are computed against it."""
    return NOW


def _pg_schema_url(schema: str) -> str:
    base = normalize_url(PG_URL or "")
    separator = "&" if "?" in base else "?"
    return f"{base}{separator}options=-csearch_path%3D{schema}"


def _new_catalog(backend: str, tmp_dir: Path) -> tuple[Catalog, callable]:
    if backend == "sqlite":
        path = tmp_dir / f"catalog-{uuid.uuid4().hex[:8]}.sqlite"
        catalog = open_catalog(f"sqlite:///{path}")
        return catalog, lambda: catalog.dispose()
    schema = f"ki_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(normalize_url(PG_URL or ""))
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    catalog = open_catalog(_pg_schema_url(schema))

    def cleanup() -> None:
        catalog.dispose()
        with admin.begin() as conn:
            conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()

    return catalog, cleanup


@pytest.fixture(params=BACKENDS)
def empty_catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Catalog]:
    """A fresh, empty catalog (schema migrated) per test, on each backend."""
    catalog, cleanup = _new_catalog(request.param, tmp_path)
    yield catalog
    cleanup()


@pytest.fixture(scope="session", params=BACKENDS)
def catalog(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Catalog]:
    """The bundled real data (Liger CSV, plus bundled verified runs when shipped), published once
    per backend. Read-only: tests that write use ``empty_catalog`` or ``liger_catalog``."""
    from kernelindex.bootstrap import ensure_bundled_data

    catalog, cleanup = _new_catalog(request.param, tmp_path_factory.mktemp("catalog"))
    ensure_bundled_data(catalog, parts=TEST_PARTS)
    yield catalog
    cleanup()


@pytest.fixture(scope="module", params=BACKENDS)
def every_source_catalog(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Catalog]:
    """What a fresh install imports: every bundled source (~80,700 runs), once per module and backend.
    Read-only. Slow (minutes): only tests/web/test_every_source.py uses it."""
    from kernelindex.bootstrap import BUNDLED_PARTS, ensure_bundled_data

    catalog, cleanup = _new_catalog(request.param, tmp_path_factory.mktemp("every-source"))
    ensure_bundled_data(catalog, parts=BUNDLED_PARTS)
    yield catalog
    cleanup()


@pytest.fixture
def liger_catalog(empty_catalog: Catalog) -> Catalog:
    """A writable catalog with only the bundled Liger CSV published (function scope)."""
    from kernelindex.sources.liger import import_liger

    import_liger(empty_catalog, dry_run=False, actor="test")
    return empty_catalog


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line saying how many PostgreSQL tests did not run and why (``-q`` hides skip reasons)."""
    if PG_URL:
        return
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if "[postgresql" in r.nodeid]
    if skipped:
        terminalreporter.write_line(f"{len(skipped)} PostgreSQL tests skipped: set KERNELINDEX_TEST_DATABASE_URL "
                                    "(e.g. postgresql://postgres@127.0.0.1:5432/test) to run them")


@pytest.fixture
def view_data_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of each view whose data is computed (a page rendered or its answer built), in order."""
    from typing import Any

    from kernelindex.views import table

    called: list[str] = []
    original = table.View.data

    def data(self: table.View, catalog: Catalog, now: datetime, args: Any) -> dict[str, Any]:
        called.append(self.name)
        return original(self, catalog, now, args)

    monkeypatch.setattr(table.View, "data", data)
    return called
