"""The command table of ``ki``: each command's module(s) and one-line help, in the order help lists them
(everyday lookups first, then administration). A command's module is imported only when it runs;
tests/cli/test_command_table.py checks the table names exactly the commands the modules register."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from typing import Any

import typer


@dataclass(frozen=True)
class CommandEntry:
    modules: tuple[str, ...]
    summary: str
    admin: bool = False


COMMANDS: dict[str, CommandEntry] = {
    "search": CommandEntry(("query_cmds",), "Search with the query grammar (an empty query lists operations)."),
    "show": CommandEntry(("query_cmds",), "Show one operation, run, implementation or GPU."),
    "use": CommandEntry(("use_cmd",), "What to run: the fastest usable implementation for an exact workload."),
    "model": CommandEntry(("model_cmd",), "One step of a model on a GPU: every kernel call, best known, floors."),
    "records": CommandEntry(("query_cmds",), "The records ledger: each cohort's holder, margin and history."),
    "compare": CommandEntry(("query_cmds",), "Compare runs side by side."),
    "resolve": CommandEntry(("query_cmds",), "Resolve an exact workload: exact cohorts, compatible runs."),
    "serve": CommandEntry(("serve_cmd",), "Serve the website and the JSON API."),
    "mcp": CommandEntry(("use_cmd",), "Serve the MCP tools over stdio (for coding agents)."),
    "init": CommandEntry(("serve_cmd",), "Create the catalog and import the bundled data it lacks.", True),
    "import": CommandEntry(("catalog_cmds", "import_cmds"), "Import a source into the catalog.", True),
    "export": CommandEntry(("catalog_cmds",), "Write the whole catalog as JSON Lines.", True),
    "manifest": CommandEntry(("catalog_cmds",), "Validate manifests and compute their identity.", True),
    "retract": CommandEntry(("catalog_cmds",), "Retract a run.", True),
    "supersede": CommandEntry(("catalog_cmds",), "Record that NEW supersedes OLD.", True),
    "approve": CommandEntry(("catalog_cmds",), "Approve a held implementation line's install line.", True),
    "verify": CommandEntry(("runner_cmds",), "Measure implementations on the local GPU.", True),
    "publish": CommandEntry(("runner_cmds",), "Check a bundle's signature and digests, then publish it.", True),
    "runner": CommandEntry(("runner_cmds", "work_cmd", "campaign_cmd"),
                           "Runner keys, the measurement-request worker and GPU campaigns.", True),
    "keys": CommandEntry(("fleet_cmds",), "API keys for the write path.", True),
    "audit": CommandEntry(("fleet_cmds",), "The append-only audit log of every write.", True),
}


@cache
def _group_of(modules: tuple[str, ...]) -> Any:
    """The click group holding the commands these modules register (built once per process)."""
    holder = typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False, add_completion=False)
    for name in modules:
        importlib.import_module(f"kernelindex.cli.{name}").register(holder)
    return typer.main.get_group(holder)


def load_command(name: str) -> Any:
    """The click command for ``name``, importing its modules; None for a name ``ki`` does not have."""
    entry = COMMANDS.get(name)
    if entry is None:
        return None
    return _group_of(entry.modules).commands.get(name)
