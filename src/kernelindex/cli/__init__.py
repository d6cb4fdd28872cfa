"""The ``ki`` command (also ``kernelindex``). Exit codes: 0 ok, 1 error, 2 usage.

Commands are loaded when they are run, not when ``ki`` starts: the command modules pull in SQLAlchemy,
Alembic and every manifest model (about a second of imports), which ``ki --help`` and ``ki --version``
never need. ``commands.COMMANDS`` names each command's module and its one-line help.
"""

from __future__ import annotations

import os
import sys
from typing import Any, NoReturn

import typer
from typer.core import TyperGroup

from kernelindex import __version__
from kernelindex.cli.commands import COMMANDS, load_command


def _end_quietly() -> NoReturn:
    """The reader went away (``ki search … | head -1``): that is how pipes end, not an error."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    raise SystemExit(0)


class _Group(TyperGroup):
    """Lists the command table without importing it; imports a command's module when it is asked for."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return load_command(cmd_name)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        for section, names in (("Commands", [n for n, c in COMMANDS.items() if not c.admin]),
                               ("Catalog and runner administration", [n for n, c in COMMANDS.items() if c.admin])):
            with formatter.section(section):
                formatter.write_dl([(name, COMMANDS[name].summary) for name in names])

    def invoke(self, ctx: Any) -> Any:  # typer's vendored click Context
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # Click would turn it into exit status 1
            _end_quietly()


def _print_version(value: bool) -> None:
    if value:
        print(f"ki (kernelindex) {__version__}")
        raise typer.Exit()


app = typer.Typer(
    cls=_Group,
    name="ki",
    help="KernelIndex: the fastest known implementation of an exact GPU workload, with its evidence.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: typer's rich panels label every flag "<bool>"
    add_completion=False,
)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                 help="Print the version and exit."),
) -> None:
    """KernelIndex: the fastest known implementation of an exact GPU workload, with its evidence."""


def main() -> None:
    """``ki``: a local ``ki search`` or ``ki show operation`` whose answer the catalog already holds is printed by
    the fast path (``cli/fast_lookup.py``) without loading the catalog's modules; every other command, and
    those when it holds none, by the command table."""
    try:
        code = None
        if sys.argv[1:2] in (["search"], ["show"]):  # other commands do not import the fast path
            from kernelindex.cli.fast_lookup import answered

            try:
                code = answered(sys.argv[1:])
            except BrokenPipeError:
                _end_quietly()
        if code is None:
            app()
        else:
            sys.exit(code)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
