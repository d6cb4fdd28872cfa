"""Which operation a cached answer depends on alone, read from its path: an operation page, one of its
run pages or implementation pages, and their JSON twins. Such an answer is kept by that operation's
own version, so it is computed again exactly when a publication changes that operation. Every other
cached answer (home, records, search, GPUs, indexes, compare) reads many operations: it is kept by
the catalog version. ``/challenges`` also shows the measurement requests, which are not catalog data:
its answer is kept, besides the catalog version, by what it shows of them (``live_scope``); so is the Atom
feed's, which lists their completions."""

from __future__ import annotations

import re
from collections.abc import Hashable
from datetime import datetime

from kernelindex import urls
from kernelindex.catalog.db import Catalog
from kernelindex.readmodel.operation_of import operation_of
from kernelindex.readmodel.requests import held_requests
from kernelindex.web.render import age

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


def live_scope(catalog: Catalog, path: str, now: datetime) -> Hashable:
    """What the answer at ``path`` shows besides the catalog, as it shows it: for /challenges, the
    measurement requests (the listing's generation, so a new, merged, claimed or finished request or a
    lapsed lease shows on the next request) and their ages as the page writes them ('40 s', '12 min'),
    so the page is rendered again when one of those moves and kept otherwise. For /feed.atom, the listing's
    generation (a finished replica is an entry). Nothing for other paths."""
    if path == urls.FEED:
        return held_requests(catalog).generation
    if path != urls.CHALLENGES:
        return ()
    held = held_requests(catalog)
    return held.generation, tuple(age(request.age_seconds(now)) for request in held.requests)
