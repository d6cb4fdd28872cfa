"""Shared CLI plumbing: opening the catalog, the actor, failing with a clear message."""

from __future__ import annotations

import getpass
import json
import os
import re
import sys
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:  # the catalog (SQLAlchemy, Alembic) is imported by the commands that open one
    from kernelindex.catalog.db import Catalog


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """The reader went away (``ki search … | head -1``): stop quietly with 0, as pipes end."""
        self.quiet = True
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(0)


console = _Console()
errors = Console(stderr=True)


def plain_console(stderr: bool = False) -> Console:
    """A console for commands that style nothing themselves: what they print (key names, runner names,
    server answers, paths) is never read as rich markup."""
    return _Console(stderr=stderr, markup=False)


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


_TAG = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")


def markup_safe(data: Any) -> Any:
    """``data`` with every string (keys too) escaped for rich: a renderer builds its markup around the
    result, so a slug, title, query or reason that looks like markup (``[/]``, ``[red]x[/red]``) prints
    as written instead of styling the line or crashing it with a MarkupError. Only what rich reads as a
    tag is escaped (rich's own ``escape`` also doubles a final backslash, which then prints twice when
    plain text follows it in the line)."""
    if isinstance(data, str):
        return _TAG.sub(lambda m: f"{m.group(1)}{m.group(1)}\\{m.group(2)}", data)
    if isinstance(data, dict):
        return {markup_safe(k): markup_safe(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [markup_safe(v) for v in data]
    return data


def print_error(message: str) -> None:
    """One ``error:`` line on stderr; ``message`` is plain text, never markup."""
    errors.print(f"[bold red]error:[/] {escape(message)}", highlight=False)


def print_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, default=str))
