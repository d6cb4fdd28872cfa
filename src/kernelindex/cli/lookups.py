"""How ``ki search`` and ``ki show operation`` print an answer, and how the full path keeps the answer it
computed for the fast path (``cli/fast_lookup.py``): both paths print from here, so they print alike."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from kernelindex.catalog.lookup_form import lookup_key
from kernelindex.cli.backends import CommandError, LocalBackend
from kernelindex.cli.renderers import emit, render_operation, render_resolution


def search_key(query: str) -> str:
    """The stored answer of ``ki search`` for the query text as the command joins its words."""
    return lookup_key("search", query)


def show_key(slug: str, query: Mapping[str, Any]) -> str:
    """The stored brief of ``ki show operation`` for the operation page's arguments that were given."""
    given = {name: value for name, value in sorted(query.items()) if value not in (None, [])}
    return lookup_key("show operation", slug, json.dumps(given))


def emit_resolution(data: dict[str, Any], as_json: bool) -> None:
    emit(data, as_json, render_resolution)
    if data.get("status") == "partial":
        raise CommandError("some terms of the query were ignored (see the notes above); the answer is for the rest",
                           1)


def emit_brief(data: dict[str, Any]) -> None:
    emit(data, False, render_operation)


def kept_lookup(backend: Any, key: str, compute: Callable[[], Any]) -> Any:
    """``compute()`` (the full path's answer), kept with its refusal too in an SQLite catalog for the fast path
    (``catalog/lookup_answers.py``). The catalog version is read first: an answer computed while a publication
    landed is kept at the older version, which no later reader asks for. One clock serves the answer and its
    staleness bounds."""
    if not isinstance(backend, LocalBackend):
        return compute()
    from kernelindex.catalog.lookup_answers import keeps_lookups, store

    if not keeps_lookups(backend.catalog):
        return compute()
    now = backend.clock()
    backend.clock = lambda: now
    version = backend.catalog.version()
    try:
        answer = compute()
    except CommandError as exc:
        store(backend.catalog, key, version, now, {"error": str(exc), "code": exc.code})
        raise
    store(backend.catalog, key, version, now, {"answer": answer})
    return answer
