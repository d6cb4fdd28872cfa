"""``ki`` lists its commands from a table without importing them (start-up, issue 22): the table must
name exactly the commands the modules register, and help lists the everyday commands before the
administrative ones without importing SQLAlchemy, Alembic or pydantic."""

from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from kernelindex.cli import app
from kernelindex.cli.commands import COMMANDS, load_command


def test_the_table_names_exactly_the_commands_the_modules_register() -> None:
    import importlib

    import typer

    modules = sorted({module for entry in COMMANDS.values() for module in entry.modules})
    holder = typer.Typer()
    for module in modules:
        importlib.import_module(f"kernelindex.cli.{module}").register(holder)
    registered = set(typer.main.get_group(holder).commands)
    assert registered == set(COMMANDS)
    for name in COMMANDS:
        assert load_command(name) is not None, name
    assert load_command("nosuch") is None


def test_help_lists_everyday_commands_first_and_runs_nothing_heavy() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    text = result.output
    assert text.index("search") < text.index("Catalog and runner administration") < text.index("import")
    probe = ("import sys; from typer.testing import CliRunner; from kernelindex.cli import app; "
             "CliRunner().invoke(app, ['--help']); "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sqlalchemy', 'alembic', 'pydantic')))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]", loaded


def test_version_and_unknown_command() -> None:
    runner = CliRunner()
    version = runner.invoke(app, ["--version"])
    assert version.exit_code == 0 and version.output.startswith("ki (kernelindex) ")
    unknown = runner.invoke(app, ["nosuch"])
    assert unknown.exit_code == 2 and "No such command" in unknown.output


def test_api_lookups_do_not_import_the_catalog() -> None:
    probe = ("import sys, kernelindex.cli.query_cmds, kernelindex.cli.use_cmd; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sqlalchemy', 'alembic')))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]", loaded
