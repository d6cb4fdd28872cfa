"""Which operation a cached answer depends on alone, read from its path: an operation page, one of its
run pages or implementation pages, and their JSON twins. Such an answer is kept by that operation's
own version, so it is computed again exactly when a publication changes that operation. Every other
cached answer (home, records, search, GPUs, indexes, compare) reads many operations: it is kept by
the catalog version."""

from __future__ import annotations

import re
import threading

from sqlalchemy import select

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import ObjectRow, RunRow

_OPERATION = re.compile(r"(?:/api/v1)?/operations/([^/]+?)(?:/workloads)?")
_RUN = re.compile(r"(?:/api/v1)?/runs/([0-9a-f]{16})(?:/samples\.json)?")
_IMPLEMENTATION = re.compile(r"(?:/api/v1)?/implementations/([^/]+)")
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


def operation_scope(catalog: Catalog, path: str) -> str | None:
    """The slug of the one operation the answer at ``path`` depends on, or None (it reads many)."""
    if found := _OPERATION.fullmatch(path):
        return found.group(1)
    if found := _RUN.fullmatch(path):
        return _LOOKUPS.operation(catalog, "run", found.group(1))
    if found := _IMPLEMENTATION.fullmatch(path):
        return _LOOKUPS.operation(catalog, "implementation", found.group(1))
    return None
