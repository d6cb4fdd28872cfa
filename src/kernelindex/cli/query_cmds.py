"""Query commands: ``ki search``, ``ki resolve``, ``ki show``, ``ki records``, ``ki compare``.

Each command gets the same JSON the API serves — from the local catalog, or from a server with
``--api URL`` — and renders it; ``--json`` prints that JSON as is. Exit codes: 0 ok, 1 error
(nothing found, server or catalog failure, or a query with ignored terms — its answer for the rest
is still printed), 2 usage (bad option or value).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from kernelindex import urls
from kernelindex.cli.backends import CommandError, LocalBackend, backend_for, run_command
from kernelindex.cli.common import DatabaseOption
from kernelindex.cli.console import print_error
from kernelindex.cli.lookups import emit_brief, emit_resolution, kept_lookup, search_key, show_key
from kernelindex.cli.page_options import PageDoor, with_page_options
from kernelindex.cli.renderers import (
    RECORDS_LIMIT,
    RENDER_SHOW,
    emit,
    render_compare,
    render_records,
)

ApiOption = typer.Option(None, "--api", envvar="KERNELINDEX_API", metavar="URL",
                         help="Ask a KernelIndex server (e.g. http://localhost:8000) instead of the local catalog.")
JsonOption = typer.Option(False, "--json", help="Print the JSON answer (the API's body) instead of tables.")
KINDS = ("operation", "run", "implementation", "gpu", "reproduction")
SHOW_PATH: dict[str, Callable[[str], str]] = {"operation": urls.operation, "run": urls.run,
                                              "implementation": urls.implementation, "gpu": urls.gpu,
                                              "reproduction": urls.reproduction}
# The commands that show a page take its parameters as options (cli/page_options.py); what is theirs is said here.
PAGE_DOORS = {
    "search": PageDoor(("search",), positional=("q",)),
    "show": PageDoor(KINDS),
    "records": PageDoor(("records",)),
    "compare": PageDoor(("compare",), positional=("run", "impl"), aliases={"operation": ("--op",)}),
}
EXIT_CODES = ("Exit codes: 0 answered; 1 error, or some terms were ignored (status partial: the answer for the "
              "rest is printed, each ignored term with its note); 2 usage.")


def _query_text(words: list[str] | None) -> str:
    return " ".join(w for w in words or [] if w.strip())


def _manifest_body(path: Path) -> dict[str, Any]:
    import yaml  # only --manifest reads YAML: a lookup does not pay for importing it

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}", 2) from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise CommandError(f"{path} is not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}", 2) from None
    if isinstance(data, dict) and data.get("kind") == "ResolveRequest":
        data = data.get("spec")
    if not isinstance(data, dict):
        raise CommandError(f"{path}: expected an object with fields operation, axes, dtype, gpu, …", 2)
    return data


def search_cmd(
    query: list[str] = typer.Argument(None, help="Free words and key:value filters, e.g. rope seq=2048 gpu:a100"),
    as_json: bool = JsonOption, api: str | None = ApiOption, database: str | None = DatabaseOption,
) -> None:
    """Search with the query grammar (an empty query lists operations).

    Natural phrasing works: "RoPE, seq 2048, hidden 8192, bf16, on H100".
    """
    text = _query_text(query)

    def action() -> None:
        backend = backend_for(api, database)
        # kept for the fast path (cli/fast_lookup.py), which reads it back on the next same search
        emit_resolution(kept_lookup(backend, search_key(text), lambda: backend.get(urls.SEARCH, {"q": text})), as_json)

    run_command(action)


def resolve_cmd(
    query: list[str] = typer.Argument(None, help="The workload in words, e.g. rope seq=2048 hidden=8192 a100"),
    manifest: Path | None = typer.Option(None, "--manifest", "-m", help="A structured request (JSON or YAML)."),
    as_json: bool = JsonOption, api: str | None = ApiOption, database: str | None = DatabaseOption,
) -> None:
    """Resolve an exact workload: exact cohorts, compatible results, nearest measured cases, gaps."""
    query = [q for q in query or [] if q.strip()]
    if bool(query) == bool(manifest):
        print_error("give a query or --manifest FILE (one of the two)")
        raise typer.Exit(2)

    def action() -> None:
        backend = backend_for(api, database)
        if manifest:
            data = backend.post_resolve(_manifest_body(manifest))
        else:
            data = backend.get(urls.SEARCH, {"q": _query_text(query)})
        emit_resolution(data, as_json)

    run_command(action)


@with_page_options(PAGE_DOORS["show"])
def show_cmd(
    kind: str = typer.Argument(..., help=f"One of: {', '.join(KINDS)} (or an operation slug: ki show rope)"),
    ident: str | None = typer.Argument(None, metavar="ID", help="Slug, GPU name or run id"),
    as_json: bool = JsonOption, api: str | None = ApiOption, database: str | None = DatabaseOption, **page: Any,
) -> None:
    """Show one operation, run, implementation or GPU: ki show KIND ID, or ki show OPERATION."""
    if ident is None and kind not in KINDS:
        kind, ident = "operation", kind
    if kind not in KINDS or ident is None:
        what = f"unknown kind {kind!r}" if kind not in KINDS else f"which {kind}? give its id"
        print_error(f"{what}; use ki show KIND ID with KIND one of {', '.join(KINDS)}, or ki show OPERATION")
        raise typer.Exit(2)
    shown, subject = kind, ident

    def action() -> None:
        query = PAGE_DOORS["show"].query(shown, page)  # a stray option is a usage error before any lookup
        backend = backend_for(api, database)
        if shown == "operation" and not as_json and isinstance(backend, LocalBackend):
            # the tables print a few of the page's fields: derive only those (readmodel.operation_brief)
            emit_brief(kept_lookup(backend, show_key(subject, query), lambda: backend.operation_brief(subject, query)))
            return
        emit(backend.get(SHOW_PATH[shown](subject), query), as_json, RENDER_SHOW[shown])

    run_command(action)


@with_page_options(PAGE_DOORS["records"])
def records_cmd(
    limit: int = typer.Option(RECORDS_LIMIT, min=0,
                              help="Rows to print (0: all; with --api every page of the API is fetched)."),
    as_json: bool = JsonOption, api: str | None = ApiOption, database: str | None = DatabaseOption, **page: Any,
) -> None:
    """The records ledger: each cohort's holder, margin and history."""
    def action() -> None:
        query = PAGE_DOORS["records"].query("records", page)
        emit(backend_for(api, database).get(urls.RECORDS, query), as_json, lambda d: render_records(d, limit))

    run_command(action)


@with_page_options(PAGE_DOORS["compare"])
def compare_cmd(
    names: list[str] = typer.Argument(..., metavar="RUN_OR_IMPL...",
                                      help="2–8 run ids; or, with --op, 1–2 implementations (slug, a shorter name "
                                           "such as liger, or slug@version)"),
    as_json: bool = JsonOption, api: str | None = ApiOption, database: str | None = DatabaseOption, **page: Any,
) -> None:
    """Compare runs side by side (a winner only when they share a cohort), or implementations across a workload
    sweep: ki compare liger torch-compile --op rope --gpu h200."""
    def action() -> None:
        query = PAGE_DOORS["compare"].query("compare", page)
        if query["operation"] is None and (query["gpu"] or query["region"]):
            raise CommandError("--gpu and --region go with --op (implementations across an operation's workloads)", 2)
        query["run" if query["operation"] is None else "impl"] = names
        emit(backend_for(api, database).get(urls.COMPARE, query), as_json, render_compare)

    run_command(action)


def register(app: typer.Typer) -> None:
    app.command("search", epilog=EXIT_CODES)(search_cmd)
    app.command("resolve", epilog=EXIT_CODES)(resolve_cmd)
    for name, command in (("show", show_cmd), ("records", records_cmd), ("compare", compare_cmd)):
        app.command(name)(command)
