"""What a stored lookup answer is kept by (``catalog/lookup_answers.py``), in terms the CLI's fast path
(``cli/fast_lookup.py``) computes with the standard library alone: it imports neither SQLAlchemy nor the
manifest models nor the read model, so this module imports nothing of them either.

An answer of ``ki search`` or ``ki show operation`` is a function of the command's arguments, the catalog
version, the code that computed it and, through staleness alone, the reader's clock. So it is kept under a key
(the command and its arguments), a form (a fingerprint of the code between the catalog and the printed JSON),
the catalog version, and the two observed instants between which the clock may move without any run changing
whether it is stale."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from functools import cache

from kernelindex.catalog.code_form import code_fingerprint
from kernelindex.policy.staleness import STALE_AFTER

TABLE = "lookup_answers"
# The code an answer passes through from the catalog's rows to the JSON a command prints (the renderers, which
# print it, are applied on every reading): a change to any of it and the stored answers are computed again.
FORM_PARTS = ("catalog", "cli", "domain", "policy", "readmodel", "registry", "resolve", "services", "views")
# How SQLite holds a timezone-aware column (SQLAlchemy's storage format, UTC): compared as text
_SQLITE_INSTANT = "%Y-%m-%d %H:%M:%S.%f"


@cache
def lookup_form() -> str:
    """A fingerprint of the package's code that computes a lookup's answer (its top-level modules and
    ``FORM_PARTS``)."""
    return code_fingerprint(FORM_PARTS, top_level=True)


def lookup_key(command: str, *arguments: str | None) -> str:
    """The stored answer's key: the command and its arguments as the command reads them."""
    return hashlib.sha256(json.dumps([command, *arguments]).encode()).hexdigest()


def stale_threshold(now: datetime) -> str:
    """The observed instant (as SQLite holds it) before which a run is stale at ``now``
    (``policy.staleness.is_stale``: observed more than ``STALE_AFTER`` before now)."""
    return (now.astimezone(UTC) - STALE_AFTER).strftime(_SQLITE_INSTANT)


def same_staleness(stale_below: str | None, fresh_from: str | None, now: datetime) -> bool:
    """Whether every run is as stale at ``now`` as when the answer was computed: the newest run then stale
    (observed at ``stale_below``) still is, and the oldest run then fresh (``fresh_from``) still is not."""
    threshold = stale_threshold(now)
    return (stale_below is None or stale_below < threshold) and (fresh_from is None or threshold <= fresh_from)
