"""Finished answers of ``ki search`` and ``ki show operation`` kept in an SQLite catalog, so that the next
``ki`` asking the same reads them back with the standard library (``cli/fast_lookup.py``) instead of importing
SQLAlchemy, the manifest models and the read model and computing them again (issue 46 item 4).

Only the full path writes them, after it has answered: the answer is what the one read path (the resolver, the
operation page's brief, with every policy rule) computed, stored as the JSON it printed from, or its refusal. A
row is read back only at the catalog version and code form it was computed at, and only while the reader's clock
leaves every run's staleness as it was (``lookup_form.same_staleness``); otherwise the full path answers and
stores again. Like the operation summaries, it is derived, not catalog data: writing it never bumps the version.
A catalog that cannot be written (a read-only file, or one an import holds: the store waits ``STORE_WAIT_MS`` for
it, not the catalog's ten seconds) keeps nothing; the answer printed is the same."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, String, delete, func, insert, select, type_coerce
from sqlalchemy import text as sql_text
from sqlalchemy.exc import SQLAlchemyError

from kernelindex.catalog.db import SQLITE_BUSY_TIMEOUT_MS, Catalog
from kernelindex.catalog.lookup_form import lookup_form, stale_threshold
from kernelindex.catalog.models import LookupAnswerRow, RunRow

KEPT_ROWS = 200  # the newest answers kept (a broad search's answer is ~0.3 MB; a show's a few kB)
STORE_WAIT_MS = 200  # how long keeping an answer waits for another writer (a lookup is not worth an import's wait)


def keeps_lookups(catalog: Catalog) -> bool:
    """Whether the fast path can read this catalog's stored answers: an SQLite file (a server's PostgreSQL
    catalog is asked with ``--api`` or read by the full path)."""
    return catalog.engine.dialect.name == "sqlite" and bool(catalog.engine.url.database)


def store(catalog: Catalog, key: str, version: int, now: datetime, body: dict[str, Any]) -> None:
    """Keep ``body`` (the answer, or the refusal) of the lookup ``key`` computed at ``version`` and ``now``."""
    threshold = stale_threshold(now)
    try:
        text = json.dumps(body, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):  # not plain JSON (the API would not serve it either): nothing to keep
        return
    try:
        with catalog.engine.begin() as conn, _waiting_briefly(conn):
            # the text SQLite holds, compared with the threshold as text as the fast path compares it (each
            # bound one read of ix_runs_observed_at)
            observed = type_coerce(RunRow.observed_at, String)
            stale_below = conn.execute(select(func.max(observed)).where(observed < threshold)).scalar()
            fresh_from = conn.execute(select(func.min(observed)).where(observed >= threshold)).scalar()
            conn.execute(delete(LookupAnswerRow).where(
                (LookupAnswerRow.version < version)
                | ((LookupAnswerRow.key == key) & (LookupAnswerRow.form == lookup_form()))))
            conn.execute(insert(LookupAnswerRow).values(
                key=key, form=lookup_form(), version=version, stale_below=stale_below, fresh_from=fresh_from,
                body=text))
            conn.execute(sql_text(f"DELETE FROM {LookupAnswerRow.__tablename__} WHERE rowid <= (SELECT rowid FROM "
                                  f"{LookupAnswerRow.__tablename__} ORDER BY rowid DESC LIMIT 1 OFFSET :kept)"),
                         {"kept": KEPT_ROWS})  # SQLite numbers rows as they are inserted: the oldest go
    except SQLAlchemyError:
        return


@contextmanager
def _waiting_briefly(conn: Connection) -> Iterator[None]:
    conn.exec_driver_sql(f"PRAGMA busy_timeout={STORE_WAIT_MS}")
    try:
        yield
    finally:
        conn.exec_driver_sql(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
