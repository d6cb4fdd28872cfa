"""The ``ki`` commands that show a page take its parameters from the page's declaration (issue 48 item 3):
the options each command has are the view's query and repeated parameters, less those it takes as its
arguments, plus the options of its own; a parameter a view gains becomes an option with no second
declaration."""

from __future__ import annotations

import dataclasses

import pytest
from typer.testing import CliRunner

from kernelindex.cli import app as ki
from kernelindex.cli.commands import load_command
from kernelindex.cli.model_cmd import MODEL_DOOR
from kernelindex.cli.page_options import PageDoor
from kernelindex.cli.query_cmds import PAGE_DOORS
from kernelindex.views import params, table

OWN = {"json", "api", "database", "limit", "help"}  # options the commands declare themselves
DOORS = {**PAGE_DOORS, "model": MODEL_DOOR}  # every command that shows a page


def _page_parameters(door: PageDoor) -> set[str]:
    return {p.name for name in door.views for p in table.VIEW[name].query} | \
        {r.param.name for name in door.views for r in table.VIEW[name].repeated}


@pytest.mark.parametrize("command", sorted(DOORS))
def test_each_page_command_has_exactly_its_pages_parameters(command: str) -> None:
    door = DOORS[command]
    clicked = load_command(command)
    options = {name.lstrip("-") for p in clicked.params if p.param_type_name == "option"
               for name in p.opts}
    flags = {c for param, _ in door.parameters() if param.name in door.flags for c in param.choices}
    aliases = {a.lstrip("-") for names in door.aliases.values() for a in names}
    assert door.option_names() | set(door.positional) == _page_parameters(door)
    assert options - OWN - aliases - flags == door.option_names() - set(door.flags)
    assert any(p.param_type_name == "argument" for p in clicked.params) or not door.positional


def test_a_parameter_a_view_gains_becomes_an_option(monkeypatch: pytest.MonkeyPatch) -> None:
    later = params.Param("since", params.PAGE_PATTERN, "Since when.", "a page number")
    records = table.VIEW["records"]
    monkeypatch.setitem(table.VIEW, "records", dataclasses.replace(records, query=(*records.query, later)))
    door = PageDoor(("records",))
    assert "since" in door.option_names()
    assert door.query("records", {"since": "3", "gpu": "h200"})["since"] == "3"


def test_an_option_the_kinds_page_does_not_take_is_a_usage_error() -> None:
    result = CliRunner().invoke(ki, ["show", "run", "0123456789abcdef", "--gpu", "h200", "--database",
                                     "sqlite:///nowhere.sqlite"])
    assert result.exit_code == 2 and "--gpu is not an option of the run page (its options: none)" in result.output
    both = CliRunner().invoke(ki, ["model", "llama-3.1-8b", "--decode", "--train", "--database",
                                   "sqlite:///nowhere.sqlite"])
    assert both.exit_code == 2 and "give one of --decode, --prefill, --train" in both.output
