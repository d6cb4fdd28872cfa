"""The operation a run or an implementation belongs to, by its id or slug, remembered per process
(a run's operation never changes). ``web/answer_scope.py`` keys an answer by that operation's version."""

from __future__ import annotations

import threading

from sqlalchemy import select

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import ObjectRow, RunRow

_KEPT = 65_536  # lookups remembered per process (a run's operation never changes)


class _Lookups:
    def __init__(self) -> None:
        self._found: dict[tuple[str, str, str], str] = {}
        self._lock = threading.Lock()

    def operation(self, catalog: Catalog, kind: str, ident: str) -> str | None:
        key = (catalog.url, kind, ident)
        if (found := self._found.get(key)) is not None:
            return found
        slug = _look_up(catalog, kind, ident)
        if slug is not None:  # not found yet is not remembered: it may be published later
            with self._lock:
                if len(self._found) >= _KEPT:
                    self._found.clear()
                self._found[key] = slug
        return slug


def _look_up(catalog: Catalog, kind: str, ident: str) -> str | None:
    with catalog.engine.connect() as conn:
        if kind == "run":
            operation = conn.execute(select(RunRow.operation).where(RunRow.run_id == ident)).scalar_one_or_none()
        else:
            operation = conn.execute(select(ObjectRow.operation).where(
                ObjectRow.kind == "ImplementationRevision", ObjectRow.name == ident).limit(1)).scalar_one_or_none()
        if operation is None:
            return None
        return conn.execute(select(ObjectRow.name).where(ObjectRow.digest == operation)).scalar_one_or_none()


_LOOKUPS = _Lookups()


def operation_of(catalog: Catalog, kind: str, ident: str) -> str | None:
    """The slug of the operation of a ``run`` (by run id) or an ``implementation`` (by slug); None: none yet."""
    return _LOOKUPS.operation(catalog, kind, ident)
