"""User and catalog text is never rich markup in the query commands (issue 23, item 8).

`ki show '[/]'`, `search`, `records`, `compare`, `use` and `resolve` crashed with MarkupError, and
`ki show run '[red]abc[/red]'` printed red: every answer is escaped once, in ``renderers.emit``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from kernelindex.catalog.db import Catalog
from kernelindex.cli import app as ki
from kernelindex.cli import renderers
from kernelindex.cli.console import markup_safe

runner = CliRunner()
HOSTILE = ["[/]", "[red]abc[/red]", "x[bold]\\"]


def _ki(catalog: Catalog, *args: str) -> Any:
    result = runner.invoke(ki, [*args, "--database", catalog.url], env={"COLUMNS": "200", "FORCE_COLOR": "1"})
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output and "MarkupError" not in result.output
    return result


@pytest.mark.parametrize("text", HOSTILE)
@pytest.mark.parametrize("command", [["show"], ["show", "run"], ["show", "implementation"], ["search"], ["resolve"],
                                     ["use"], ["records", "--operation"], ["compare", "0123456789ab"]])
def test_user_text_prints_as_written(catalog: Catalog, command: list[str], text: str) -> None:
    result = _ki(catalog, *command, text)
    assert result.exit_code in (0, 1, 2)
    if "[red]" in text and command[0] in ("show", "search", "resolve", "use", "compare"):
        assert "[red]abc[/red]" in result.output  # the brackets themselves, not red text
        assert "\x1b[31m" not in result.output


def test_show_run_of_a_markup_id_names_it_literally(catalog: Catalog) -> None:
    result = _ki(catalog, "show", "run", "[red]abc[/red]")
    assert result.exit_code in (1, 2) and "[red]abc[/red]" in result.output and "\x1b[31m" not in result.output


def _rendered(data: Any, render: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    console = Console(record=True, width=400, force_terminal=True)
    monkeypatch.setattr(renderers, "console", console)
    renderers.emit(data, False, render)
    return console.export_text()


def _poisoned(data: Any, text: str) -> Any:
    """Every string in an answer replaced by markup-looking text, keeping hex ids (they are looked up)."""
    if isinstance(data, str):
        return data if data.isalnum() or data[:1].isdigit() else f"{text}{data}"
    if isinstance(data, dict):
        return {k: _poisoned(v, text) for k, v in data.items()}
    return [_poisoned(v, text) for v in data] if isinstance(data, list) else data


@pytest.mark.parametrize("text", HOSTILE)
def test_catalog_text_in_every_renderer_prints_as_written(catalog: Catalog, text: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    search = json.loads(_ki(catalog, "search", "rope", "seq=2048", "hidden=8192", "gpu:a100", "--json").stdout)
    run_id = search["exact"][0]["rows"][0]["run_id"]
    show = json.loads(_ki(catalog, "show", "run", run_id, "--json").stdout)
    records = json.loads(_ki(catalog, "records", "--operation", "rope", "--json").stdout)
    answers = [(search, renderers.render_resolution), (show, renderers.render_run),
               (records, lambda d: renderers.render_records(d, 5))]
    for data, render in answers:
        out = _rendered(_poisoned(data, text), render, monkeypatch)
        assert text in out, out[:500]
    assert markup_safe({"[/]": ["[red]x[/red]", 1, None]}) == {"\\[/]": ["\\[red]x\\[/red]", 1, None]}


@pytest.mark.parametrize("text", HOSTILE)
def test_admin_and_import_commands_print_data_as_written(text: str, tmp_path: Any) -> None:
    """Commands that style nothing print through a console without markup (key names, the audit log, runner
    names); the export report escapes what the file named (tables, sources, reasons)."""
    from kernelindex.catalog import audit
    from kernelindex.catalog.db import open_catalog

    db = f"sqlite:///{tmp_path / 'c.sqlite'}"
    audit.record(open_catalog(db), actor="anonymous", action="request.create", client=f"10.0.0.1{text}",
                 outcome=f"refused: {text}")
    logged = runner.invoke(ki, ["audit", "--database", db], env={"COLUMNS": "300"})
    assert logged.exit_code == 0 and f"refused: {text}" in logged.output, logged.output
    export = tmp_path / "export.jsonl"
    export.write_text('{"table": "sources", "row": {"id": "s1", "slug": "x"}}\n'
                      + json.dumps({"table": f"t{text}", "row": {}}) + "\n", encoding="utf-8")
    imported = runner.invoke(ki, ["import", "kernelindex-export", str(export), "--dry-run", "--database", db],
                             env={"COLUMNS": "300"})
    assert imported.exception is None or isinstance(imported.exception, SystemExit), repr(imported.exception)
    assert f"skipped table t{text}: 1 rows" in imported.output, imported.output
