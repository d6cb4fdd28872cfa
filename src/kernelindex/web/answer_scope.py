"""Which operation a cached answer depends on alone, read from its path: an operation page, one of its
run pages or implementation pages, and their JSON twins. Such an answer is kept by that operation's
own version, so it is computed again exactly when a publication changes that operation. Every other
cached answer (home, records, search, GPUs, indexes, compare) reads many operations: it is kept by
the catalog version."""

from __future__ import annotations

import re

from kernelindex.catalog.db import Catalog
from kernelindex.readmodel.operation_of import operation_of

_OPERATION = re.compile(r"(?:/api/v1)?/operations/([^/]+?)(?:/workloads)?")
_RUN = re.compile(r"(?:/api/v1)?/runs/([0-9a-f]{16})(?:/samples\.json)?")
_IMPLEMENTATION = re.compile(r"(?:/api/v1)?/implementations/([^/]+)")


def operation_scope(catalog: Catalog, path: str) -> str | None:
    """The slug of the one operation the answer at ``path`` depends on, or None (it reads many)."""
    if found := _OPERATION.fullmatch(path):
        return found.group(1)
    if found := _RUN.fullmatch(path):
        return operation_of(catalog, "run", found.group(1))
    if found := _IMPLEMENTATION.fullmatch(path):
        return operation_of(catalog, "implementation", found.group(1))
    return None
