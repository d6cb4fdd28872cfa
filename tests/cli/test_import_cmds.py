"""A source's ``ki import`` command is its declaration (docs/design.md §16): ``cli/import_cmds.py`` builds it
from the package's ``ImportCommand`` — inputs, help, the flow of every import — with no edit to the CLI. The
example's module stands where a source package's ``command.py`` would, and reports what it was given."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from kernelindex.cli.import_cmds import command_of
from kernelindex.sources.declaration import ImportCommand, ImportOption

SPEC = ImportCommand(
    "example", "Import the example source: one run per line of FILE.", "example_source_command",
    (ImportOption("file", "The example's file."), ImportOption("only", "Import only this table.", "--only", "text")),
    counting="lines")


class BadLine(ValueError):
    pass


class Report:
    def __init__(self, given: dict[str, Any]) -> None:
        self.given = given

    def to_json(self) -> dict[str, Any]:
        return {"lines": self.given["file"].read_text(encoding="utf-8").count("\n"), "only": self.given["only"],
                "dry_run": self.given["dry_run"]}


def _run(catalog: Any, *, dry_run: bool, actor: str, progress: Any, file: Path, only: str | None) -> Report:
    if "bad" in file.read_text(encoding="utf-8"):
        raise BadLine(f"{file.name}: line 1 is bad; fix it or leave it out")
    return Report({"file": file, "only": only, "dry_run": dry_run})


@pytest.fixture
def app(monkeypatch: pytest.MonkeyPatch) -> typer.Typer:
    module = types.ModuleType(SPEC.module)
    module.run, module.INPUT_ERRORS = _run, (BadLine,)  # type: ignore[attr-defined]
    module.printout = lambda report, safe: [f"{safe(report.to_json()['only'])}: {report.to_json()['lines']} lines"]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, SPEC.module, module)
    holder = typer.Typer()
    holder.command(SPEC.name)(command_of(SPEC))
    holder.command("other")(lambda: None)  # two commands: the group names each by its name
    return holder


def test_a_declared_command_takes_its_inputs_and_runs_the_import_flow(app: typer.Typer, tmp_path: Path) -> None:
    data, db = tmp_path / "example.txt", f"sqlite:///{tmp_path / 'c.sqlite'}"
    data.write_text("a\nb\nc\n", encoding="utf-8")
    runner = CliRunner()
    helped = runner.invoke(app, ["example", "--help"], env={"COLUMNS": "200"})
    assert helped.exit_code == 0 and "one run per line of FILE" in helped.output
    assert all(part in helped.output for part in ("FILE", "--only", "--dry-run", "--publish", "--json", "--database"))
    given = runner.invoke(app, ["example", str(data), "--only", "t[1]", "--dry-run", "--json", "--database", db])
    assert given.exit_code == 0, given.output
    assert json.loads(given.output) == {"lines": 3, "only": "t[1]", "dry_run": True}
    printed = runner.invoke(app, ["example", str(data), "--only", "[red]x", "--publish", "--database", db])
    assert printed.exit_code == 0 and "[red]x: 3 lines" in printed.output, printed.output
    no_mode = runner.invoke(app, ["example", str(data), "--database", db])
    assert no_mode.exit_code == 2 and "--dry-run" in no_mode.output
    missing = runner.invoke(app, ["example", str(tmp_path / "nosuch.txt"), "--dry-run", "--database", db])
    assert missing.exit_code == 2 and "does not exist" in missing.output


def test_a_bad_input_is_the_source_s_own_message(app: typer.Typer, tmp_path: Path) -> None:
    data = tmp_path / "example.txt"
    data.write_text("bad\n", encoding="utf-8")
    refused = CliRunner().invoke(app, ["example", str(data), "--dry-run", "--database",
                                       f"sqlite:///{tmp_path / 'c.sqlite'}"])
    assert refused.exit_code == 1 and "example.txt: line 1 is bad; fix it or leave it out" in refused.output
