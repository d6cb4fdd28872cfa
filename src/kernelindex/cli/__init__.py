"""The ``ki`` command (also ``kernelindex``). Exit codes: 0 ok, 1 error, 2 usage."""

from __future__ import annotations

import os
import sys
from typing import Any, NoReturn

import typer
from typer.core import TyperGroup

from kernelindex.cli import (
    catalog_cmds,
    export_import_cmd,
    fleet_cmds,
    query_cmds,
    runner_cmds,
    serve_cmd,
    use_cmd,
    work_cmd,
)


def _end_quietly() -> NoReturn:
    """The reader went away (``ki search … | head -1``): that is how pipes end, not an error."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    raise SystemExit(0)


class _Group(TyperGroup):
    def invoke(self, ctx: Any) -> Any:  # typer's vendored click Context
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # Click would turn it into exit status 1
            _end_quietly()


app = typer.Typer(
    cls=_Group,
    name="ki",
    help="KernelIndex: the fastest known implementation of an exact GPU workload, with its evidence.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: typer's rich panels label every flag "<bool>"
    add_completion=False,
)
for commands in (catalog_cmds, export_import_cmd, serve_cmd, query_cmds, runner_cmds, use_cmd, fleet_cmds, work_cmd):
    commands.register(app)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
