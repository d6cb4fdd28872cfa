"""Opening a catalog: the database URL, the engine, migrations."""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from alembic import command
from alembic.config import Config
from platformdirs import user_data_dir
from sqlalchemy import Engine, create_engine, event, select
from sqlalchemy.orm import Session, sessionmaker

from kernelindex.catalog.models import CatalogStateRow

ENV_URL = "KERNELINDEX_DATABASE_URL"
SQLITE_BUSY_TIMEOUT_MS = 10_000


def default_url() -> str:
    path = Path(user_data_dir("kernelindex", appauthor=False)) / "catalog.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


def configured_url() -> str:
    return os.environ.get(ENV_URL) or default_url()


def normalize_url(url: str) -> str:
    """Accept plain ``postgresql://`` URLs and use psycopg 3 for them."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


@dataclass
class Catalog:
    url: str
    engine: Engine
    sessions: sessionmaker[Session]
    # Every request reads the version (the read model's cache key). On its own autocommit engine that
    # read is one round trip; through ``engine`` it is BEGIN + SELECT + ROLLBACK, 1.3 ms vs 0.2 ms on
    # PostgreSQL over loopback (bench/RESULTS.md, "Load under concurrency").
    version_engine: Engine | None = None

    def session(self) -> Session:
        return self.sessions()

    def version(self) -> int:
        """Bumped by every write; read models cache on it."""
        with (self.version_engine or self.engine).connect() as conn:
            return conn.execute(select(CatalogStateRow.version).where(CatalogStateRow.id == 1)).scalar_one()

    def dispose(self) -> None:
        """Close every pooled connection (before forking workers, or when done with the catalog)."""
        for engine in (self.engine, self.version_engine):
            if engine is not None:
                engine.dispose()

    def display_location(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)


def _sqlite_pragmas(dbapi_connection, _record) -> None:  # noqa: ANN001 - DBAPI hook
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.close()


def _alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(resources.files("kernelindex.catalog") / "migrations"))
    return cfg


def migrate(engine: Engine) -> None:
    with engine.begin() as connection:
        cfg = _alembic_config()
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, "head")


def open_catalog(url: str | None = None, *, migrate_schema: bool = True) -> Catalog:
    url = normalize_url(url or configured_url())
    engine, version_engine = (create_engine(url, future=True, pool_pre_ping=True, **options)
                              for options in ({}, {"isolation_level": "AUTOCOMMIT"}))
    if engine.dialect.name == "sqlite":
        for each in (engine, version_engine):
            event.listen(each, "connect", _sqlite_pragmas)
    if migrate_schema:
        migrate(engine)
    return Catalog(url=url, engine=engine, sessions=sessionmaker(engine, expire_on_commit=False),
                   version_engine=version_engine)
