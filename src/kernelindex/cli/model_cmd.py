"""``ki model SLUG --gpu h100 --decode --batch 32 --ctx 4096 [--tp N]``: one step of a model on one GPU —
every kernel call with its shapes, the best usable implementation the catalog knows on that GPU, its floor,
and the step's sum (the same answer as ``/models/{slug}``, its JSON twin and the MCP tool ``get_model_step``).
Without a slug it lists the models."""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from kernelindex import urls
from kernelindex.cli.backends import backend_for, run_command
from kernelindex.cli.common import DatabaseOption
from kernelindex.cli.console import console
from kernelindex.cli.page_options import PageDoor, with_page_options
from kernelindex.cli.query_cmds import ApiOption, JsonOption
from kernelindex.domain.units import format_duration


def render_models(data: dict[str, Any]) -> None:
    for model in data["models"]:
        c = model["config"]
        experts = f", {model['experts']} experts top-{model['top_k']}" if model.get("experts") else ""
        console.print(f"[bold]{model['slug']}[/]  {model['title']} · {c['num_hidden_layers']} layers · hidden "
                      f"{c['hidden_size']}{experts} · {model['license']['name']} · {model['source']['url']}",
                      highlight=False)


def render_model(data: dict[str, Any]) -> None:
    s, summary, gpu = data["step"], data["summary"], data["gpu"]
    console.print(f"[bold]{data['model']['title']}[/] · {s['phase']} · batch {s['batch']} · "
                  f"{'context' if s['phase'] == 'decode' else 'seq'} {s['seq']} · TP {s['tp']} · {gpu['label']}",
                  highlight=False)
    table = Table(show_edge=False, pad_edge=False, show_lines=False)
    for column in ("call", "×", "shapes", "catalog", "best usable", "figure", "floor", "ratio"):
        table.add_column(column, justify="right" if column in ("×", "figure", "floor", "ratio") else "left")
    for c in data["calls"]:
        answer = c.get("answer") or {}
        impl = (answer.get("implementation") or {}).get("title", "—")
        evidence = f" ({answer['evidence']}, {c['statistic']})" if answer else ""
        catalog = ((c.get("operation") or {}).get("slug") or "—") + f" [{c['status']}]"
        if c.get("differs"):
            catalog += " " + ", ".join(f"{d['axis']} {d['measured']} (call {d['call']})" for d in c["differs"])
        figure = c["figure"] + ("" if c.get("in_estimate") or not answer else " (not summed)")
        table.add_row(c["name"], str(c["count"]), c["shape_label"], catalog, impl + evidence, figure,
                      format_duration(c.get("floor_ns"), 2), f"{c['ratio']}×" if c.get("ratio") else "—")
    console.print(table)
    console.print(f"Step estimate on {gpu['label']}: [bold]{summary['estimate']}[/] (exact "
                  f"{format_duration(summary['exact_ns'])}, nearest {format_duration(summary['nearest_ns'])}; "
                  f"verified {format_duration(summary['verified_ns'])}, reported "
                  f"{format_duration(summary['reported_ns'])}) · floor {summary['floor']} · {summary['label']}",
                  highlight=False)
    console.print(summary["statistic_note"], highlight=False)
    if summary["no_floor"]:
        console.print(f"No floor (not in the step's floor): {', '.join(summary['no_floor'])}", highlight=False)
    if summary["missing"]:
        console.print(f"Not in the estimate: {', '.join(summary['missing'])}", highlight=False)
    for gap in data["gaps"][:3]:
        console.print(f"Gap: {gap['name']} {gap['gap']} above the floor per step", highlight=False)
    for note in data["notes"]:
        console.print(f"[dim]{note}[/]", highlight=False)


MODEL_DOOR = PageDoor(("model",), aliases={"seq": ("--ctx",)}, flags=("phase",))


@with_page_options(MODEL_DOOR)
def model_cmd(
    slug: str | None = typer.Argument(None, help="A model slug (llama-3.1-8b); none lists the models"),
    as_json: bool = JsonOption, api: str | None = ApiOption, database: str | None = DatabaseOption, **step: Any,
) -> None:
    """One step of a model on a GPU: every kernel call, the best known implementation, floors and gaps."""
    def action() -> None:
        if slug is None:
            _emit(backend_for(api, database).get(urls.MODELS, {}), as_json, render_models)
            return
        query = MODEL_DOOR.query("model", step)  # a stray option is a usage error before any lookup
        _emit(backend_for(api, database).get(urls.model(slug), query), as_json, render_model)

    run_command(action)


def register(app: typer.Typer) -> None:
    app.command("model")(model_cmd)


def _emit(data: Any, as_json: bool, render: Any) -> None:
    from kernelindex.cli.renderers import emit

    emit(data, as_json, render)
