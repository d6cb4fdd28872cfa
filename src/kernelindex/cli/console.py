"""The terminals ``ki`` prints to (rich consoles), and how user text is kept from reading as rich markup. Rich
alone: the fast path of a lookup (``cli/fast_lookup.py``) prints through these without importing typer."""

from __future__ import annotations

import os
import re
import sys
from typing import Any, NoReturn

from rich.console import Console
from rich.markup import escape


def end_quietly() -> NoReturn:
    """The reader went away (``ki search … | head -1``): that is how pipes end, not an error."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    raise SystemExit(0)


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """The reader went away (``ki search … | head -1``): stop quietly with 0, as pipes end."""
        self.quiet = True
        end_quietly()


console = _Console()
errors = Console(stderr=True)


def plain_console(stderr: bool = False) -> Console:
    """A console for commands that style nothing themselves: what they print (key names, runner names,
    server answers, paths) is never read as rich markup."""
    return _Console(stderr=stderr, markup=False)


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
