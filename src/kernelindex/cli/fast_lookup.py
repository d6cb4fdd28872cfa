"""The fast path of ``ki search`` and ``ki show operation`` over an SQLite catalog (issue 46 item 4).

A local lookup through the full path imports SQLAlchemy with the catalog's ORM models, the pydantic manifest
models and the read model (0.5–0.7 s of CPU on the shared 2-core machines) before it reads a row. When the
catalog holds this command's finished answer (``catalog/lookup_answers.py``: kept by the full path at this
catalog version, by this code's form, and still true at this clock's staleness), this path reads it with the
standard library's ``sqlite3`` and prints it with the same renderers; it computes nothing itself, so the rules
(eligibility, usability, ranking, the floor) still run in one place. Anything else — no stored answer, another
version or form, a run that went stale since, ``--json``, ``--api``, ``--help``, an option it does not read, a
PostgreSQL or unreadable catalog — and it answers None: the full path answers (and keeps its answer).

It imports neither SQLAlchemy nor pydantic nor the read model, nor typer (``tests/cli/test_fast_lookup.py`` checks)."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernelindex.catalog.lookup_form import TABLE, lookup_form, same_staleness

# the operation page's options it reads (``views/table.py``: its query less ``page``) and the kinds of ``ki show``
SHOW_OPTIONS = ("workload", "cohort", "gpu")
SHOW_KINDS = ("operation", "run", "implementation", "gpu", "reproduction")
DATABASE_ENV, API_ENV = "KERNELINDEX_DATABASE_URL", "KERNELINDEX_API"
_SQLITE = "sqlite:///"


@dataclass(frozen=True)
class Lookup:
    """A command line the fast path reads: ``search`` with its query text, or ``show`` with its operation."""

    command: str
    subject: str  # the query text, or the operation's slug
    options: dict[str, str]  # the operation page's options given, and --database


def parse(argv: list[str]) -> Lookup | None:
    """The lookup ``argv`` asks for as the command would read it, or None for any other command line."""
    if not argv or argv[0] not in ("search", "show"):
        return None
    takes = {"database", *SHOW_OPTIONS} if argv[0] == "show" else {"database"}
    options: dict[str, str] = {}
    words: list[str] = []
    rest = iter(argv[1:])
    for token in rest:
        if not token.startswith("-"):
            words.append(token)
            continue
        name, equals, value = token.removeprefix("--").partition("=")
        value = value if equals else next(rest, "-")
        if not token.startswith("--") or name not in takes or name in options or not value or value[0] == "-":
            return None
        options[name] = value
    if argv[0] == "search":
        return Lookup("search", " ".join(w for w in words if w.strip()), options)
    if len(words) == 1 and words[0] not in SHOW_KINDS:
        words = ["operation", *words]
    return Lookup("show", words[1], options) if len(words) == 2 and words[0] == "operation" else None


def catalog_file(database: str | None) -> Path | None:
    """The SQLite file the command would open (``--database``, ``$KERNELINDEX_DATABASE_URL``, or the default),
    or None when it is not a plain local SQLite URL or the file does not exist yet."""
    url = database or os.environ.get(DATABASE_ENV)
    if url is None:
        from platformdirs import user_data_dir

        path = Path(user_data_dir("kernelindex", appauthor=False)) / "catalog.sqlite"
    elif url.startswith(_SQLITE) and len(url) > len(_SQLITE) and "?" not in url:
        path = Path(url.removeprefix(_SQLITE))
    else:
        return None
    return path if path.is_file() else None


def stored_answer(path: Path, key: str, now: datetime) -> dict[str, Any] | None:
    """The kept answer at ``key`` if it is still the answer: this catalog version, this code, this staleness."""
    import json

    try:
        conn = sqlite3.connect(path, timeout=10)
        try:
            row = conn.execute(f"SELECT a.body, a.stale_below, a.fresh_from FROM {TABLE} a JOIN catalog_state s "
                               "ON s.id = 1 AND a.version = s.version WHERE a.key = ? AND a.form = ?",
                               (key, lookup_form())).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:  # no such table (an older catalog), locked, not a catalog: the full path answers
        return None
    if row is None or not same_staleness(row[1], row[2], now):
        return None
    body: dict[str, Any] = json.loads(row[0])
    return body


def answered(argv: list[str], now: datetime | None = None) -> int | None:
    """Print the stored answer of the lookup ``argv`` and return the command's exit code; None when the full
    path must answer."""
    lookup = parse(argv)
    if lookup is None or os.environ.get(API_ENV):
        return None
    path = catalog_file(lookup.options.pop("database", None))
    if path is None:
        return None
    from kernelindex.cli.lookups import search_key, show_key

    key = search_key(lookup.subject) if lookup.command == "search" else show_key(lookup.subject, lookup.options)
    body = stored_answer(path, key, now or datetime.now(UTC))
    return None if body is None else _print(lookup.command, body)


def _print(command: str, body: dict[str, Any]) -> int:
    from kernelindex.cli.backends import CommandError
    from kernelindex.cli.console import print_error
    from kernelindex.cli.lookups import emit_brief, emit_resolution

    try:
        if "error" in body:
            raise CommandError(body["error"], body["code"])
        if command == "search":
            emit_resolution(body["answer"], False)
        else:
            emit_brief(body["answer"])
    except CommandError as exc:
        print_error(str(exc))
        return exc.code
    return 0
