"""Shared CLI plumbing: opening the catalog, the actor, failing with a clear message (the consoles it prints to
are ``cli/console.py``'s)."""

from __future__ import annotations

import getpass
import json
import os
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from kernelindex.cli.console import print_error

if TYPE_CHECKING:  # the catalog (SQLAlchemy, Alembic) is imported by the commands that open one
    from kernelindex.catalog.db import Catalog


DatabaseOption = typer.Option(
    None,
    "--database",
    envvar="KERNELINDEX_DATABASE_URL",
    help="Catalog URL (sqlite:///path or postgresql://...). Default: an SQLite file in your data directory.",
)


def open_for_cli(database: str | None) -> Catalog:
    from kernelindex.catalog.db import open_catalog

    try:
        return open_catalog(database)
    except Exception as exc:  # noqa: BLE001 - any driver error becomes one clear line
        fail(f"cannot open the catalog at {database or 'the default location'}: {exc}")


def actor() -> str:
    return os.environ.get("KERNELINDEX_ACTOR") or getpass.getuser()


def fail(message: str, code: int = 1) -> NoReturn:
    """Print one error line and exit. ``message`` is plain text: user text in it (a file name, a
    run id, a query) is never read as rich markup."""
    print_error(message)
    raise typer.Exit(code)


def print_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, default=str))
