"""Opening a catalog: the database URL, the engine, migrations."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from platformdirs import user_data_dir
from sqlalchemy import Engine, create_engine, event, select, text
from sqlalchemy.exc import SQLAlchemyError
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
    # PostgreSQL over loopback (docs/performance.md, load).
    version_engine: Engine | None = None
    # How long one version read answers again (0: every call reads). The served app sets VERSION_FRESH_S
    # so a request does not wait on a database round trip (docs/caching.md); this process's own writes
    # end it at once (``written``), another process's show within that long.
    version_fresh_s: float = 0.0
    _version_read: tuple[float, int] | None = field(default=None, repr=False, compare=False)
    _writes: int = field(default=0, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def session(self) -> Session:
        return self.sessions()

    def version(self) -> int:
        """Bumped by every write; read models cache on it."""
        kept = self._version_read
        if kept is not None and time.monotonic() - kept[0] < self.version_fresh_s:
            return kept[1]
        writes, started = self._writes, time.monotonic()
        with (self.version_engine or self.engine).connect() as conn:
            version = conn.execute(select(CatalogStateRow.version).where(CatalogStateRow.id == 1)).scalar_one()
        with self._lock:  # a read that began before one of this process's writes is not kept
            if self.version_fresh_s > 0 and writes == self._writes:
                self._version_read = (started, version)
        return version

    def known_version(self) -> tuple[int, float] | None:
        """The version last read and its age in seconds, without a database read; None when there is none to
        answer from: never read, read with ``version_fresh_s`` 0, or this process wrote since."""
        kept = self._version_read
        return None if kept is None else (kept[1], time.monotonic() - kept[0])

    @property
    def writes(self) -> int:
        """How many times this process wrote (``written``): a read begun before the last one may not show it."""
        return self._writes

    def written(self) -> None:
        """This process changed the catalog: the next ``version`` reads the database."""
        with self._lock:
            self._writes += 1
            self._version_read = None

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


if TYPE_CHECKING:
    from alembic.config import Config


def _alembic_config() -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(resources.files("kernelindex.catalog") / "migrations"))
    return cfg


def head_revision() -> str:
    """The newest migration's revision: the migrations are numbered, each file named by its revision."""
    names = [entry.name[:4] for entry in (resources.files("kernelindex.catalog") / "migrations" / "versions").iterdir()]
    return max(name for name in names if name.isdigit())


def at_head(engine: Engine) -> bool:
    """Whether the catalog's schema is the newest already: then opening it needs no Alembic (importing
    it and reading its scripts took ~0.5 s of every ``ki`` lookup, issue 46 item 4)."""
    try:
        with engine.connect() as conn:
            return bool(conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == head_revision())
    except SQLAlchemyError:  # no version table yet: a new catalog
        return False


def migrate(engine: Engine) -> None:
    from alembic import command

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
    if migrate_schema and not at_head(engine):
        migrate(engine)
    return Catalog(url=url, engine=engine, sessions=sessionmaker(engine, expire_on_commit=False),
                   version_engine=version_engine)
