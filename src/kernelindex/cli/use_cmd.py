"""``ki use QUERY``: what to run for an exact workload on a GPU (the same answer as ``GET /api/v1/use``,
the MCP tool ``recommend_kernel`` and the operation page's "Use this" box)."""

from __future__ import annotations

from typing import Any

import typer
from rich.syntax import Syntax
from rich.text import Text

from kernelindex import urls
from kernelindex.cli.backends import LocalBackend, backend_for, empty_catalog_hint, run_command
from kernelindex.cli.common import DatabaseOption
from kernelindex.cli.console import console
from kernelindex.cli.query_cmds import ApiOption, JsonOption
from kernelindex.domain.units import format_duration
from kernelindex.policy.floor_names import FLOOR_NAMES, PHYSICAL


def use_answer(api: str | None, database: str | None, text: str) -> dict[str, Any]:
    backend = backend_for(api, database)
    if not isinstance(backend, LocalBackend):
        return backend.get(urls.USE, {"q": text})
    return backend.use(text)


def render_use(data: dict[str, Any]) -> None:
    for issue in (data.get("query") or {}).get("issues", []):
        fix = f" → try [cyan]{issue['suggestion']}[/]" if issue.get("suggestion") else ""
        console.print(f"[yellow]![/] [bold]{issue['token']}[/]: {issue['message']}{fix}", highlight=False)
    console.print(f"[bold]{data['message']}[/]", highlight=False)
    for choice in data["choices"]:
        console.print(f"  ki use \"{choice['query']}\"", highlight=False)
    rec = data.get("recommendation")
    if not rec:
        return
    for answer in rec["answers"]:
        _answer_block(answer)
    nearest = rec.get("nearest")
    if nearest:
        console.print(f"Nearest evidence: {nearest['gpu_label']} ({nearest['why']}).", highlight=False)
        for answer in nearest["answers"]:
            _answer_block(answer)
    floor = rec.get("floor")
    if floor:
        console.print(f"{rec['gpu']['label']} {floor['name']}: {format_duration(floor['floor_ns'])} "
                      f"({floor['bound']}-bound, floor-v1 · {floor['label']}). {floor['latency']}", highlight=False)
    console.print(f"[dim]{rec['note']}[/]", highlight=False)


def _answer_block(answer: dict[str, Any]) -> None:
    impl = answer["implementation"]
    kind = {"verified+default": "verified and default cohort"}.get(answer["cohort_kind"],
                                                                    f"{answer['cohort_kind']} cohort")
    console.print(f"\n[bold]{answer['cohort_label']}[/] [dim]({kind} {answer['cohort']})[/]", highlight=False)
    version = f" {impl['version']}" if impl.get("version") else ""
    vs = f" · {answer['vs_fastest']:.2f}× the fastest" if answer.get("vs_fastest") else ""
    floor = f" · {answer['floor_ratio']:.2f}× above the {FLOOR_NAMES[PHYSICAL]}" if answer.get("floor_ratio") else ""
    console.print(f"  {impl['title']}{version} ({impl['project']}, {impl['license'] or 'license unknown'}) · "
                  f"{answer['median']} · #{answer['rank_label']}{vs}{floor}", highlight=False)
    console.print(f"  Evidence: {answer['evidence_line']}", highlight=False)
    if not answer["usable_found"]:
        reasons = "; ".join(r["sentence"] for r in answer["not_usable_reasons"])
        console.print(f"  [yellow]No usable implementation in this cohort[/]: {reasons}", highlight=False)
        return
    console.print(f"  Install:  [cyan]{answer['install']}[/]", highlight=False)
    if answer.get("snippet"):
        code = Text.from_markup(answer["snippet"]).plain  # the answer arrives escaped; Syntax reads no markup
        console.print(Syntax(code, "python", theme="ansi_dark", background_color="default"))
    console.print(f"  Run: {answer['run_url']}", highlight=False)


def register(app: typer.Typer) -> None:
    @app.command("use")
    def use_cmd(
        query: list[str] = typer.Argument(..., help="The workload and GPU, e.g. rope seq=2048 hidden=8192 bf16 h200"),
        as_json: bool = JsonOption, api: str | None = ApiOption, database: str | None = DatabaseOption,
    ) -> None:
        """What to run: the fastest usable implementation for an exact workload on a GPU, with its pinned
        install line, a runnable snippet, the evidence and the floor ratio."""
        from kernelindex.cli.renderers import emit

        def action() -> None:
            emit(use_answer(api, database, " ".join(query)), as_json, render_use)

        run_command(action)

    @app.command("mcp")
    def mcp_cmd(database: str | None = DatabaseOption) -> None:
        """Serve the MCP tools over stdio (for coding agents): the same answers as the API, from the local
        catalog. Configure your agent to run `ki mcp`; see docs/agents.md."""
        from kernelindex.catalog.holdings import has_runs
        from kernelindex.cli.common import open_for_cli
        from kernelindex.web.mcp_server.server import build_server

        catalog = open_for_cli(database)
        if not has_runs(catalog):  # stdout carries the protocol: the hint goes to stderr, and the tools still answer
            typer.echo(f"ki mcp: {empty_catalog_hint(catalog.display_location(), database)}", err=True)
        build_server(catalog).run("stdio")
