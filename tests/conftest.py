"""Shared fixtures: real catalogs on a real SQLite file, and on PostgreSQL when
KERNELINDEX_TEST_DATABASE_URL is set (each catalog gets its own schema, so parallel tests and
other users of the database never see each other's tables).

A catalog test runs on PostgreSQL too only where SQL differs (``POSTGRES_PATHS`` below, or a test's
``@pytest.mark.backends("sqlite", "postgresql")``): the catalog layer, the publication transaction,
migrations, summaries, leases and concurrency, read-model loading. Rendering, JSON shapes, CLI text, MCP
answers and the browser read what those layers return and run on SQLite alone;
tests/test_postgres_front_doors.py keeps one PostgreSQL smoke test per front door."""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from kernelindex.catalog.db import Catalog, normalize_url, open_catalog
from kernelindex.readmodel.operation_data import OperationData

PG_URL = os.environ.get("KERNELINDEX_TEST_DATABASE_URL")
# What the session ``catalog`` fixture, and every bootstrap a test or its ``ki`` subprocess makes without
# naming parts, imports: Liger, the export and the verified bundles (~14,000 runs). A fresh install imports
# every bundled source (aiter and KernelBench too, ~80,700 runs); tests/web/test_every_source.py imports
# those once per backend and checks the site-wide pages with them.
TEST_PARTS = ("liger", "export", "verified")
os.environ["KERNELINDEX_BUNDLED_PARTS"] = ",".join(TEST_PARTS)
# PostgreSQL stays in every count: without the variable its tests are reported as skipped, with the reason.
POSTGRES = pytest.param("postgresql", marks=pytest.mark.skipif(
    not PG_URL, reason="PostgreSQL tests need KERNELINDEX_TEST_DATABASE_URL "
    "(e.g. postgresql://postgres@127.0.0.1:5432/test)"))
BACKENDS = ["sqlite", POSTGRES]
# Where SQL differs, so a catalog test runs on both backends (paths under tests/, a folder ending in "/").
# Everything else reads what these layers return and runs on SQLite (issue 47).
POSTGRES_PATHS = (
    "catalog/",  # the catalog layer: publication transaction, migrations, idempotency, concurrent publication
    "readmodel/",  # read-model loading, stored summaries, the catalog-version cache
    "fleet/test_claims.py",  # leases: claims refused leave the request and the catalog as they were
    "fleet/test_requests.py",  # leases: request merging, expiry and completion
    "fleet/test_work_e2e.py",  # two runners racing for leases over a real server
    "fleet/test_keys_and_uploads.py",  # keys, audit and uploads: each refusal rolls back
    "fleet/test_write_path_abuse.py",  # concurrent identical uploads, one publication
    "fleet/test_site_asks.py",  # the changes feed's cursor paging in SQL
    "fleet/test_completion_race.py",  # (on main) completions serialised: BEGIN IMMEDIATE / an advisory lock
    "fleet/test_edges.py",  # (on main) a summary replaced by concurrent publications; untrust as a publication
    "fleet/test_audit_floods.py",  # (on main) refused writes aggregated into one audit row a minute in SQL
    "fleet/test_export_exhaustion.py",  # (on main) the export written from one read snapshot
    "fleet/test_challenges_answer.py",  # another process's change seen through the catalog version
    "api/test_service_answers.py",  # answers kept per catalog version, recomputed after a publication
    "sources/test_kernelindex_export.py",  # idempotent re-publishing of the real export
    "web/test_version_freshness.py",  # the catalog version read across connections
    "web/test_publication_invalidation.py",  # per-operation versions bumped in the publication transaction
    "web/test_answer_cache.py",  # answers kept per catalog version, a write by another connection
    "web/test_warming.py",  # re-warming read models after a publication
    "web/test_stored_values.py",  # damaged values written into typed columns
    "web/test_reliability.py",  # a zero median stored directly in a column
)
TESTS = Path(__file__).resolve().parent
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


def _backends_of(metafunc: pytest.Metafunc) -> list[Any]:
    """The backends a test's catalogs run on: its ``backends`` mark, else both under POSTGRES_PATHS, else SQLite."""
    mark = metafunc.definition.get_closest_marker("backends")
    if mark is not None:
        return [POSTGRES if name == "postgresql" else name for name in mark.args]
    where = Path(str(metafunc.definition.fspath)).resolve().relative_to(TESTS).as_posix()
    both = any(where.startswith(path) if path.endswith("/") else where == path for path in POSTGRES_PATHS)
    return BACKENDS if both else ["sqlite"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every catalog fixture depends on ``catalog_backend``: one value per backend the test runs on."""
    if "catalog_backend" in metafunc.fixturenames:
        metafunc.parametrize("catalog_backend", _backends_of(metafunc), indirect=True, scope="session")


@pytest.hookimpl(tryfirst=True)  # before -m deselects by these marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark PostgreSQL twins ``postgres`` (so ``-m postgres`` / ``-m "not postgres"`` split a run in two)
    and the tests on every bundled source ``slow``."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("catalog_backend") == "postgresql":
            item.add_marker(pytest.mark.postgres)
        if "every_source_catalog" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


class _ModulesWhole:
    """Each module's tests run together, the PostgreSQL twins after the rest. pytest groups the tests by the
    session-scoped ``catalog_backend`` parameter and put a module's tests without a catalog after all the
    SQLite ones: a module that has both ran in two parts, and its module-scoped fixtures (a CPU campaign, a
    browser, a catalog of its own) were built twice."""

    @pytest.hookimpl(trylast=True)  # after pytest's own reordering by fixture parameters
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        first_seen: dict[str, int] = {}
        for index, item in enumerate(items):
            first_seen.setdefault(item.nodeid.split("::")[0], index)

        def place(item: pytest.Item) -> tuple[bool, int]:
            callspec = getattr(item, "callspec", None)
            twin = callspec is not None and callspec.params.get("catalog_backend") == "postgresql"
            return twin, first_seen[item.nodeid.split("::")[0]]

        items.sort(key=place)  # stable: pytest's order within a module (its module-scoped parameters) stays


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_ModulesWhole(), "kernelindex-modules-whole")


@pytest.fixture(scope="session")
def catalog_backend(request: pytest.FixtureRequest) -> str:
    """``sqlite`` or ``postgresql`` (parametrized by pytest_generate_tests)."""
    return str(request.param)


@pytest.fixture
def empty_catalog(catalog_backend: str, tmp_path: Path) -> Iterator[Catalog]:
    """A fresh, empty catalog (schema migrated) per test, on each backend the test runs on."""
    catalog, cleanup = _new_catalog(catalog_backend, tmp_path)
    yield catalog
    cleanup()


@pytest.fixture(scope="session")
def catalog(catalog_backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Catalog]:
    """The bundled real data (Liger CSV, the export, the verified bundles), published once per backend.
    Read-only: tests that write use ``empty_catalog`` or ``liger_catalog``."""
    from kernelindex.bootstrap import ensure_bundled_data

    catalog, cleanup = _new_catalog(catalog_backend, tmp_path_factory.mktemp("catalog"))
    ensure_bundled_data(catalog, parts=TEST_PARTS)
    yield catalog
    cleanup()


@pytest.fixture(scope="session")
def catalog_operations(catalog: Catalog) -> dict[str, OperationData]:
    """Every operation of the session ``catalog``, loaded once per backend and held: the tests that walk them all
    share it, and a test that empties the read cache (a fresh worker's) no longer makes the next one load them all
    again (10–30 s each on a busy machine). A test that changes a loaded run puts it back."""
    from kernelindex.readmodel.loading import load_all_operations

    return load_all_operations(catalog)


@pytest.fixture(scope="session")
def every_source_catalog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Catalog]:
    """What a fresh install imports: every bundled source (~80,700 runs), once per run, on SQLite: the pages it
    checks read the stored summaries the catalog layer's tests cover on both backends. Read-only; slow."""
    from kernelindex.bootstrap import BUNDLED_PARTS, ensure_bundled_data

    catalog, cleanup = _new_catalog("sqlite", tmp_path_factory.mktemp("every-source"))
    ensure_bundled_data(catalog, parts=BUNDLED_PARTS)
    yield catalog
    cleanup()


@pytest.fixture(scope="session")
def every_source_operations(every_source_catalog: Catalog) -> dict[str, OperationData]:
    """Every operation of ``every_source_catalog`` loaded in one pass (``load_all_operations``, about a minute),
    held for the session: the tests that walk every operation share it instead of each loading them again (one
    by one that took four times as long), and a test that empties the read cache does not drop it. Read-only."""
    from kernelindex.readmodel.loading import load_all_operations

    return load_all_operations(every_source_catalog)


@pytest.fixture(scope="session")
def _liger_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite catalog with the bundled Liger CSV published, built once per run and copied per test."""
    from kernelindex.sources.liger import import_liger

    path = tmp_path_factory.mktemp("liger-template") / "liger.sqlite"
    catalog = open_catalog(f"sqlite:///{path}")
    import_liger(catalog, dry_run=False, actor="test")
    catalog.dispose()
    return path


@pytest.fixture
def liger_catalog(catalog_backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Catalog]:
    """A writable catalog with only the bundled Liger CSV published (function scope): on SQLite a copy of one
    prebuilt file, on PostgreSQL an import into the test's own schema."""
    if catalog_backend == "sqlite":
        target = tmp_path / f"liger-{uuid.uuid4().hex[:8]}.sqlite"
        source, copy = sqlite3.connect(request.getfixturevalue("_liger_template")), sqlite3.connect(target)
        source.backup(copy)
        source.close()
        copy.close()
        catalog = open_catalog(f"sqlite:///{target}")
        yield catalog
        catalog.dispose()
        return
    from kernelindex.sources.liger import import_liger

    catalog, cleanup = _new_catalog(catalog_backend, tmp_path)
    import_liger(catalog, dry_run=False, actor="test")
    yield catalog
    cleanup()


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
    from kernelindex.views import table

    called: list[str] = []
    original = table.View.data

    def data(self: table.View, catalog: Catalog, now: datetime, args: Any) -> dict[str, Any]:
        called.append(self.name)
        return original(self, catalog, now, args)

    monkeypatch.setattr(table.View, "data", data)
    return called
