"""Query commands: ``ki search``, ``ki resolve``, ``ki show``, ``ki records``, ``ki compare``.

Each command gets the same JSON the API serves — from the local catalog, or from a server with
``--api URL`` — and renders it; ``--json`` prints that JSON as is. Exit codes: 0 ok, 1 error
(nothing found, server or catalog failure, or a query with ignored terms — its answer for the rest
is still printed), 2 usage (bad option or value).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
import yaml
from pydantic import ValidationError
from rich import box
from rich.table import Table

from kernelindex.cli.common import DatabaseOption, console, errors, print_json
from kernelindex.domain.units import format_duration, format_ratio

ApiOption = typer.Option(None, "--api", envvar="KERNELINDEX_API", metavar="URL",
                         help="Ask a KernelIndex server (e.g. http://localhost:8000) instead of the local catalog.")
JsonOption = typer.Option(False, "--json", help="Print the JSON answer (the API's body) instead of tables.")
KINDS = ("operation", "run", "implementation", "gpu")
EXIT_CODES = ("Exit codes: 0 answered; 1 error, or some terms were ignored (status partial: the answer for the "
              "rest is printed, each ignored term with its note); 2 usage.")
RECORDS_LIMIT = 50


class CommandError(Exception):
    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


# ---- backends: the local catalog or a server, same JSON --------------------------------------


class LocalBackend:
    def __init__(self, database: str | None) -> None:
        from kernelindex.bootstrap import ensure_bundled_data
        from kernelindex.cli.common import open_for_cli

        self.catalog = open_for_cli(database)
        ensure_bundled_data(self.catalog)

    def get(self, path: str, params: dict[str, Any]) -> Any:
        return _local_get(self.catalog, path, {k: v for k, v in params.items() if v is not None})

    def post_resolve(self, body: dict[str, Any]) -> Any:
        from kernelindex.resolve.request import ResolveRequest
        from kernelindex.resolve.service import RequestProblems, resolve_structured

        try:
            request = ResolveRequest.model_validate(body)
            return resolve_structured(self.catalog, request).to_json()
        except ValidationError as exc:
            raise CommandError("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()), 2) \
                from None
        except RequestProblems as exc:
            raise CommandError(_problems_text([p.to_json() for p in exc.problems]), 2) from None


def _problems_text(problems: list[dict[str, Any]]) -> str:
    return "; ".join(f"{p['field']}: {p['message']}" + (f" (did you mean {p['suggestion']!r}?)"
                                                         if p.get("suggestion") else "") for p in problems)


def _local_get(catalog: Any, path: str, params: dict[str, Any]) -> Any:
    from kernelindex.readmodel.loading import NotFound
    from kernelindex.readmodel.operations import BadSelection, operation_page
    from kernelindex.readmodel.pages_common import BadParameter
    from kernelindex.readmodel.pages_compare import compare_page
    from kernelindex.readmodel.pages_gpus import gpu_page
    from kernelindex.readmodel.pages_implementations import implementation_page
    from kernelindex.readmodel.pages_records import records_page
    from kernelindex.readmodel.runs import run_dossier
    from kernelindex.resolve.service import search

    kind, _, ident = path.strip("/").partition("/")
    try:
        if kind == "search":
            return search(catalog, params.get("q", "")).to_json()
        if kind == "operations":
            return operation_page(catalog, ident, **params).to_json()
        if kind == "runs":
            return run_dossier(catalog, ident).to_json()
        if kind == "implementations":
            return implementation_page(catalog, ident).to_json()
        if kind == "gpus":
            return gpu_page(catalog, ident).to_json()
        if kind == "records":
            return records_page(catalog, **params).to_json()
        if kind == "compare":
            return compare_page(catalog, list(params["run"])).to_json()
    except NotFound as exc:
        raise CommandError(str(exc), 1) from None
    except (BadSelection, BadParameter) as exc:
        raise CommandError(str(exc), 2) from None
    raise CommandError(f"unknown path {path}", 2)


def http_client(base: str) -> Any:
    """The HTTP client for ``--api`` (tests substitute an in-process one)."""
    import httpx

    return httpx.Client(base_url=base + "/api/v1", timeout=30.0)


class HttpBackend:
    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/")
        self.client = http_client(self.base)

    def _answer(self, response: Any) -> Any:
        if response.status_code < 400:
            return response.json()
        try:
            problem = response.json()
        except ValueError:
            raise CommandError(f"{self.base} answered {response.status_code}", 1) from None
        detail = problem.get("detail", response.reason_phrase)
        if problem.get("errors") and any("suggestion" in e for e in problem["errors"]):
            detail = _problems_text(problem["errors"])
        raise CommandError(detail, 2 if response.status_code in (400, 413, 415, 422) else 1)

    def _send(self, method: str, path: str, **kwargs: Any) -> Any:
        import httpx

        try:
            return self._answer(self.client.request(method, path, **kwargs))
        except httpx.HTTPError as exc:
            raise CommandError(f"cannot reach {self.base}: {exc}", 1) from None

    def get(self, path: str, params: dict[str, Any]) -> Any:
        params = {k: v for k, v in params.items() if v is not None}
        data = self._send("GET", path, params=params)
        while isinstance(data, dict) and isinstance(data.get("pagination"), dict):
            # A paginated page model (the records ledger): follow the cursors, then show it whole,
            # exactly as the local catalog would.
            paging = data.pop("pagination")
            if not paging["next_cursor"]:
                break
            more = self._send("GET", path, params={**params, "limit": 200, "cursor": paging["next_cursor"]})
            more[paging["list"]] = data[paging["list"]] + more[paging["list"]]
            data = more
        return data

    def post_resolve(self, body: dict[str, Any]) -> Any:
        return self._send("POST", "/resolve", json=body)


def _backend(api: str | None, database: str | None) -> LocalBackend | HttpBackend:
    return HttpBackend(api) if api else LocalBackend(database)


def _run(action: Any) -> None:
    try:
        action()
    except CommandError as exc:
        errors.print(f"[bold red]error:[/] {exc}", highlight=False)
        raise typer.Exit(exc.code) from None


# ---- rendering ------------------------------------------------------------------------------


def _axes(cohort: dict[str, Any]) -> str:
    workload = cohort["workload"]
    parts = [f"{k} {v}" for k, v in workload["axes"].items()] + sorted(set(workload["dtypes"].values()))
    return " · ".join(parts)


def _rows_table(cohort: dict[str, Any]) -> Table:
    table = Table(title=f"{cohort['label']} · {_axes(cohort)}", title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("Implementation", min_width=12)
    table.add_column("Median", justify="right", no_wrap=True)
    table.add_column("vs #1", justify="right", no_wrap=True)
    table.add_column("Evidence", no_wrap=True)
    table.add_column("Usable", no_wrap=True)
    table.add_column("Run", no_wrap=True, min_width=16)
    for row in cohort["rows"]:
        impl = row["implementation"]
        rank = row["rank_label"] + ("~" if row["within_noise"] else "")
        title = impl["title"] + (" (baseline)" if impl["baseline"] else "")
        table.add_row(rank, title, format_duration(row["median_ns"], 2), format_ratio(row["vs_first"]),
                      row["evidence"] + ("*" if row["stale"] else ""), "yes" if impl["usable"] else "no",
                      row["run_id"])
    notes = []
    if any(r["within_noise"] for r in cohort["rows"]):
        notes.append("~ within noise of the row above")
    if any(r["stale"] for r in cohort["rows"]):
        notes.append("* stale: observed more than 180 days ago")
    table.caption = " · ".join(notes) or None
    table.caption_justify = "left"
    return table


def render_resolution(data: dict[str, Any]) -> None:
    console.print(f"[bold]{data['interpretation']}[/]", highlight=False)
    for issue in (data.get("query") or {}).get("issues", []):
        fix = f" → try [cyan]{issue['suggestion']}[/]" if issue.get("suggestion") else ""
        console.print(f"[yellow]![/] [bold]{issue['token']}[/]: {issue['message']}{fix}", highlight=False)
    console.print(data["message"], highlight=False)
    for choice in data["choices"]:
        console.print(f"  {choice['slug']:<28} {choice['title']} · {choice['eligible_runs']} runs", highlight=False)
    for cohort in data["exact"]:
        _cohort_block(cohort)
    if data["exact_total"] > len(data["exact"]):
        console.print(f"[dim]{data['exact_total'] - len(data['exact'])} more exact cohort(s) not listed; bind more "
                      "axes or add gpu:/mode: to narrow[/]", highlight=False)
    if data["nearest"]:
        _render_nearest(data["nearest"])
    for cohort in data["other_protocols"]:
        console.print("[dim]Other protocol (not ranked against exact):[/]")
        _cohort_block(cohort)
    if data["compatible"]["shown"] and not data["exact"] and not data["nearest"]:
        _render_compatible(data["compatible"])
    for gap in data["gaps"]:
        console.print(f"[dim]gap:[/] {gap['message']}", highlight=False)
    for note in data["notes"]:
        console.print(f"[dim]{note['sentence']}[/]", highlight=False)
    _hint(data)


def _cohort_block(cohort: dict[str, Any]) -> None:
    if cohort["rows"]:
        console.print(_rows_table(cohort))
        _hidden_lines(cohort)
        return
    hidden = len(cohort["hidden_by_filters"])
    why = "; ".join(sorted({h["sentence"] for h in cohort["hidden_by_filters"]}))
    console.print(f"{cohort['label']} · {_axes(cohort)}: [dim]all {hidden} row(s) hidden by the filters — {why}[/]",
                  highlight=False)


def _hidden_lines(cohort: dict[str, Any]) -> None:
    for h in cohort["hidden_by_filters"]:
        console.print(f"  [dim]hidden: {h['implementation']} — {h['sentence']}[/]", highlight=False)
    for h in cohort["not_ranked"]:
        console.print(f"  [dim]not ranked: {h['implementation']} ({h['run_id']}) — {h['sentence']}[/]",
                      highlight=False)


def _render_nearest(nearest: dict[str, Any]) -> None:
    console.print(f"[bold]{nearest['message']}[/] — {nearest['note']}", highlight=False)
    for side in ("below", "above"):
        n = nearest[side]
        if not n:
            continue
        table = Table(title=f"{side}: {nearest['axis']} {n['value']} · ki resolve {n['query']}", title_justify="left")
        for name in ("Cohort", "Leader", "Median", "Runs"):
            table.add_column(name, justify="right" if name in ("Median", "Runs") else "left")
        for c in n["leaders"]:
            leader = c["leader"]
            table.add_row(f"{c['label']} · {_axes(c)}", leader["implementation"]["title"] if leader else "—",
                          format_duration(leader["median_ns"], 2) if leader else "—", str(c["eligible_runs"]))
        console.print(table)


def _render_compatible(compatible: dict[str, Any]) -> None:
    table = Table(title=f"Compatible ({len(compatible['shown'])} of {compatible['total']})", title_justify="left")
    for name in ("Cohort", "Differs in", "Leader", "Median"):
        table.add_column(name, justify="right" if name == "Median" else "left")
    for c in compatible["shown"]:
        diff = ", ".join(f"{m['field']} {m['observed']} (asked {m['requested']})" for m in c["mismatches"])
        leader = c["leader"]
        table.add_row(f"{c['label']} · {_axes(c)}", diff, leader["implementation"]["title"] if leader else "—",
                      format_duration(leader["median_ns"], 2) if leader else "—")
    console.print(table)


def _hint(data: dict[str, Any]) -> None:
    hint = None
    if data["exact"] and data["exact"][0]["rows"]:
        hint = f"ki show run {data['exact'][0]['rows'][0]['run_id']}"
    elif data["nearest"]:
        side = data["nearest"]["below"] or data["nearest"]["above"]
        hint = f"ki resolve {side['query']}"
    elif data["compatible"]["shown"]:
        hint = f"ki resolve {data['compatible']['shown'][0]['query']}"
    elif data["choices"]:
        hint = f"ki resolve {data['choices'][0]['query']}"
    if hint:
        console.print(f"[dim]next:[/] {hint}", highlight=False)


def _kv(title: str, pairs: list[tuple[str, Any]]) -> None:
    table = Table(title=title, title_justify="left", show_header=False)
    table.add_column(style="dim")
    table.add_column()
    for key, value in pairs:
        table.add_row(key, "—" if value is None else str(value))
    console.print(table)


def render_run(d: dict[str, Any]) -> None:
    timing = d["timing"]
    rank = f"{d['rank_label']} of {d['cohort_size']}" if d["rank_label"] else "not ranked: " + "; ".join(
        r["sentence"] for r in d["not_ranked_reasons"])
    _kv(f"Run {d['run_id']} · {d['operation_title']}", [
        ("status", d["status"]), ("implementation", d["implementation"]["title"]),
        ("median", format_duration(timing.get("median_ns"), 2)),
        ("p20–p80", f"{format_duration(timing.get('p20_ns'), 2)} – {format_duration(timing.get('p80_ns'), 2)}"),
        ("rank", rank), ("vs #1", format_ratio(d["vs_first"])), ("cohort", d["cohort_label"]),
        ("workload", d["workload"]["label"]), ("gpu", d["gpu"]), ("evidence", d["evidence_sentence"]),
        ("license", d["implementation"]["license"]),
        ("install", d["implementation"]["install_command"] or "; ".join(
            r["sentence"] for r in d["implementation"]["not_usable_reasons"])),
        ("observed", d["observed_at"][:10] + (" (stale)" if d["stale"] else "")),
        ("floor", f"{format_duration(d['floor_ns'], 2)} · {format_ratio(d['floor_ratio'])} above (estimate)"
         if d["floor_ns"] else None),
        ("page", d["operation_url"]),
    ])
    if d.get("retraction"):
        console.print(f"[bold red]Retracted:[/] {d['retraction'].get('reason')}", highlight=False)
    console.print(f"[dim]next:[/] ki show operation {d['operation']}", highlight=False)


def render_operation(d: dict[str, Any]) -> None:
    console.print(f"[bold]{d['title']}[/] ({d['slug']}) · {d['eligible_runs']} eligible runs", highlight=False)
    for slot in d["headline"]:
        row = slot["row"]
        console.print(f"  {slot['title']}: {row['implementation']['title']} {format_duration(row['median_ns'], 2)}"
                      f" · {slot['cohort_label']}", highlight=False)
    table = Table(title="Ranked (selected cohort)", title_justify="left")
    for name in ("#", "Implementation", "Median", "vs #1", "Evidence", "Run"):
        table.add_column(name, justify="right" if name in ("#", "Median", "vs #1") else "left")
    for row in d["ranked"]:
        table.add_row(row["rank_label"] + (" ~" if row["within_noise"] else ""), row["implementation"]["title"],
                      format_duration(row["median_ns"], 2), format_ratio(row["vs_first"]), row["evidence"],
                      row["run_id"])
    console.print(table)
    if d["ranked"]:
        console.print(f"[dim]next:[/] ki show run {d['ranked'][0]['run_id']}", highlight=False)


def render_implementation(d: dict[str, Any]) -> None:
    _kv(f"{d['title']} · {d['operation'].get('title', '')}", [
        ("language", d["language"]), ("invocation", d["invocation"]), ("role", d["role"]),
        ("revisions", ", ".join(str(r["version"] or r["commit"]) for r in d["revisions"])),
        ("install", "; ".join(r["install_command"] or ", ".join(x["sentence"] for x in r["reasons"])
                              for r in d["revisions"])),
        ("records held", len(d["records_held"])), ("runs", len(d["runs"])), ("gpus", ", ".join(d["gpus"])),
    ])


def render_gpu(d: dict[str, Any]) -> None:
    gpu = d["gpu"]
    _kv(gpu["name"], [("architecture", gpu["architecture"]), ("bandwidth", f"{gpu['bandwidth_gbps']} GB/s"),
                      ("source", gpu["source"]), ("operations measured", len(d["coverage"])),
                      ("records held", len(d["records"]))])


def render_records(d: dict[str, Any], limit: int = RECORDS_LIMIT) -> None:
    cohorts = d["cohorts"][:limit] if limit else d["cohorts"]
    events = d["events"][:limit] if limit else d["events"]
    table = Table(title=f"Records · {d['view']} · {len(d['cohorts'])} cohorts", title_justify="left")
    for name in ("Operation", "Workload", "Cohort", "Holder", "Median", "Margin", "Runs"):
        table.add_column(name, justify="right" if name in ("Median", "Margin", "Runs") else "left")
    for c in cohorts:
        leader = c["leader"] or {}
        table.add_row(c["operation"], c["workload_label"], c["label"], leader.get("implementation", "—"),
                      format_duration(leader.get("median_ns"), 2), format_ratio(c["margin_vs_second"]),
                      str(c["eligible_runs"]))
    if d["cohorts"] or not d["events"]:
        console.print(table)
    for e in events:
        console.print(f"{e['event']['at'][:10]} {e['operation']} · {e['cohort_label']} · {e['event']['kind']}",
                      highlight=False)
    more = len(d["cohorts"]) - len(cohorts) + len(d["events"]) - len(events)
    if more:
        console.print(f"[dim]… {more} more; narrow with --operation/--gpu, or show them with --limit "
                      f"{limit * 4} (--limit 0 for all)[/]", highlight=False)


def render_compare(d: dict[str, Any]) -> None:
    table = Table(title="Compare", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("Run", no_wrap=True, min_width=16)
    for name in ("Implementation", "Median", "×", "Cohort", "Rank"):
        table.add_column(name, justify="right" if name in ("Median", "×", "Rank") else "left")
    for r in d["runs"]:
        run = r["run"]
        table.add_row(run["run_id"], run["implementation"], format_duration(run["median_ns"], 2),
                      format_ratio(d["multiples"].get(run["run_id"])), r["cohort_label"], r["rank"] or "—")
    console.print(table)
    console.print(d["verdict"], highlight=False)
    if d.get("difference") and d["difference"]["sentence"] != d["verdict"]:
        console.print(d["difference"]["sentence"], highlight=False)


RENDER_SHOW = {"operation": render_operation, "run": render_run, "implementation": render_implementation,
               "gpu": render_gpu}
SHOW_PATH = {"operation": "operations", "run": "runs", "implementation": "implementations", "gpu": "gpus"}


def _query_text(words: list[str] | None) -> str:
    return " ".join(w for w in words or [] if w.strip())


def _emit_resolution(data: dict[str, Any], as_json: bool) -> None:
    _emit(data, as_json, render_resolution)
    if data.get("status") == "partial":
        raise CommandError("some terms of the query were ignored (see the notes above); the answer is for the rest",
                           1)


def _emit(data: Any, as_json: bool, render: Any) -> None:
    if as_json:
        print_json(data)
    else:
        render(data)


def _manifest_body(path: Path) -> dict[str, Any]:
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


# ---- commands -------------------------------------------------------------------------------


def register(app: typer.Typer) -> None:
    @app.command("search", epilog=EXIT_CODES)
    def search_cmd(
        query: list[str] = typer.Argument(None, help="Free words and key:value filters, e.g. rope seq=2048 gpu:a100"),
        as_json: bool = JsonOption, api: str | None = ApiOption, database: str | None = DatabaseOption,
    ) -> None:
        """Search with the query grammar (an empty query lists operations).

        Natural phrasing works: "RoPE, seq 2048, hidden 8192, bf16, on H100".
        """
        _run(lambda: _emit_resolution(_backend(api, database).get("/search", {"q": _query_text(query)}), as_json))

    @app.command("resolve", epilog=EXIT_CODES)
    def resolve_cmd(
        query: list[str] = typer.Argument(None, help="The workload in words, e.g. rope seq=2048 hidden=8192 a100"),
        manifest: Path | None = typer.Option(None, "--manifest", "-m", help="A structured request (JSON or YAML)."),
        as_json: bool = JsonOption, api: str | None = ApiOption, database: str | None = DatabaseOption,
    ) -> None:
        """Resolve an exact workload: exact cohorts, compatible results, nearest measured cases, gaps."""
        query = [q for q in query or [] if q.strip()]
        if bool(query) == bool(manifest):
            errors.print("[bold red]error:[/] give a query or --manifest FILE (one of the two)")
            raise typer.Exit(2)

        def action() -> None:
            backend = _backend(api, database)
            if manifest:
                data = backend.post_resolve(_manifest_body(manifest))
            else:
                data = backend.get("/search", {"q": _query_text(query)})
            _emit_resolution(data, as_json)

        _run(action)

    @app.command("show")
    def show_cmd(
        kind: str = typer.Argument(..., help=f"One of: {', '.join(KINDS)} (or an operation slug: ki show rope)"),
        ident: str | None = typer.Argument(None, metavar="ID", help="Slug, GPU name or run id"),
        workload: str | None = typer.Option(None, help="Operation: workload key"),
        cohort: str | None = typer.Option(None, help="Operation: cohort key"),
        as_json: bool = JsonOption, api: str | None = ApiOption, database: str | None = DatabaseOption,
    ) -> None:
        """Show one operation, run, implementation or GPU: ki show KIND ID, or ki show OPERATION."""
        if ident is None and kind not in KINDS:
            kind, ident = "operation", kind
        if kind not in KINDS or ident is None:
            what = f"unknown kind {kind!r}" if kind not in KINDS else f"which {kind}? give its id"
            errors.print(f"[bold red]error:[/] {what}; use ki show KIND ID with KIND one of {', '.join(KINDS)}, "
                         "or ki show OPERATION", highlight=False)
            raise typer.Exit(2)
        params = {"workload": workload, "cohort": cohort} if kind == "operation" else {}
        _run(lambda: _emit(_backend(api, database).get(f"/{SHOW_PATH[kind]}/{ident}", params), as_json,
                           RENDER_SHOW[kind]))

    @app.command("records")
    def records_cmd(
        operation: str | None = typer.Option(None, help="Operation slug"),
        gpu: str | None = typer.Option(None, help="GPU: a100, H100, h100-sxm … (as in search)"),
        evidence: str | None = typer.Option(None, help="Evidence level"),
        view: str | None = typer.Option(None, help="current, recently-broken or history"),
        limit: int = typer.Option(RECORDS_LIMIT, min=0, help="Rows to print (0: all)."),
        as_json: bool = JsonOption, api: str | None = ApiOption, database: str | None = DatabaseOption,
    ) -> None:
        """The records ledger: each cohort's holder, margin and history."""
        params = {"operation": operation, "gpu": gpu, "evidence": evidence, "view": view}
        _run(lambda: _emit(_backend(api, database).get("/records", params), as_json,
                           lambda d: render_records(d, limit)))

    @app.command("compare")
    def compare_cmd(
        runs: list[str] = typer.Argument(..., help="2–8 run ids"),
        as_json: bool = JsonOption, api: str | None = ApiOption, database: str | None = DatabaseOption,
    ) -> None:
        """Compare runs side by side; a winner only when they share a cohort."""
        _run(lambda: _emit(_backend(api, database).get("/compare", {"run": runs}), as_json, render_compare))
