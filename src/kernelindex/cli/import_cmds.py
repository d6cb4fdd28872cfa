"""``ki import <source>``: one command per registered source, built from the ``ImportCommand`` its package
declares (``sources/declaration.py``), so a source registered in ``registry/sources.yaml`` has its command with
no edit here. The command's inputs, help and report are the source's; the flow (--dry-run or --publish, the
progress bar, errors, --json) is ``import_flow.run_import``."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from kernelindex.cli.catalog_cmds import import_app
from kernelindex.cli.common import DatabaseOption, actor
from kernelindex.cli.console import console, markup_safe
from kernelindex.cli.import_flow import run_import
from kernelindex.sources.declaration import ImportCommand, ImportOption
from kernelindex.sources.registry import declarations

_KEYWORD = inspect.Parameter.KEYWORD_ONLY


def _input(option: ImportOption) -> inspect.Parameter:
    """The typer parameter of one declared input: an existing file (or folder, ``path``), or a word."""
    if option.kind == "text":
        text = typer.Option(None, *([option.flag] if option.flag else []), help=option.help)
        return inspect.Parameter(option.name, _KEYWORD, default=text, annotation=str)
    folders = option.kind == "path"
    if option.flag is None:
        given = typer.Argument(..., exists=True, dir_okay=folders, help=option.help)
    else:
        given = typer.Option(None, option.flag, exists=True, dir_okay=folders, help=option.help)
    return inspect.Parameter(option.name, _KEYWORD, default=given, annotation=Path)


def _parameters(spec: ImportCommand) -> list[inspect.Parameter]:
    """Its arguments, then --dry-run and --publish, its options, --json and --database (the order help lists)."""
    def flag(name: str, default: Any, annotation: type) -> inspect.Parameter:
        return inspect.Parameter(name, _KEYWORD, default=default, annotation=annotation)

    return [*(_input(o) for o in spec.options if o.flag is None),
            flag("dry_run", typer.Option(False, "--dry-run", help="Print the report; write nothing."), bool),
            flag("publish", typer.Option(False, "--publish", help=spec.publish_help), bool),
            *(_input(o) for o in spec.options if o.flag is not None),
            flag("as_json", typer.Option(False, "--json", help="Machine-readable report."), bool),
            flag("database", DatabaseOption, str)]


def command_of(spec: ImportCommand) -> Callable[..., None]:
    """The command function typer mounts as ``ki import <spec.name>``."""
    def command(*, dry_run: bool, publish: bool, as_json: bool, database: str, **inputs: Any) -> None:
        entry = importlib.import_module(spec.module)

        def printed(report: Any) -> None:
            for part in entry.printout(report, markup_safe):
                console.print(part)

        run_import(dry_run=dry_run, publish=publish, database=database, as_json=as_json, counting=spec.counting,
                   source_errors=entry.INPUT_ERRORS, print_report=printed,
                   importer=lambda catalog, dry, progress: entry.run(catalog, dry_run=dry, actor=actor(),
                                                                    progress=progress, **inputs))

    parameters = _parameters(spec)
    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": None}
    command.__doc__ = spec.help
    command.__name__ = f"import_{spec.name.replace('-', '_')}_cmd"
    return command


for _declared in declarations():
    import_app.command(_declared.command.name)(command_of(_declared.command))


def register(app: typer.Typer) -> None:
    """The commands hang off ``ki import``, which catalog_cmds registers; importing this module adds them."""
