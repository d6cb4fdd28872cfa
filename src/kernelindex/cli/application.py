"""The ``ki`` command table as typer's application: the commands listed without importing them, each loaded
when it runs (``commands.COMMANDS``), and ``--version``."""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

from kernelindex import __version__
from kernelindex.cli.commands import COMMANDS, load_command


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
            from kernelindex.cli.console import end_quietly  # rich's console: --help does not need it

            end_quietly()


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
