"""Terminal rendering of the query commands' JSON answers (rich tables and short lines)."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table

from kernelindex.cli.console import console, markup_safe
from kernelindex.domain.units import format_duration, format_ratio
from kernelindex.policy.floor_names import ATTAINABLE, FLOOR_NAMES, PHYSICAL
from kernelindex.readmodel.kernel_names import short_title

RECORDS_LIMIT = 50


def _name(implementation: dict[str, Any]) -> str:
    """An implementation's title as a table or note shows it: a generated kernel name shortened (run pages and
    --json keep the full one)."""
    return short_title(implementation["title"])


def _axes(cohort: dict[str, Any]) -> str:
    workload = cohort["workload"]
    parts = [f"{k} {v}" for k, v in workload["axes"].items()] + sorted(set(workload["dtypes"].values()))
    return " · ".join(parts)


def _rows_table(cohort: dict[str, Any]) -> Table:
    table = Table(title=f"{cohort['label']} · {_axes(cohort)} · ranks the {cohort['ranked_statistic']}",
                  title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("Implementation", min_width=12)
    table.add_column("Latency", justify="right", no_wrap=True)
    table.add_column("vs #1", justify="right", no_wrap=True)
    table.add_column("Evidence", no_wrap=True)
    table.add_column("Usable", no_wrap=True)
    table.add_column("Run", no_wrap=True, min_width=16)
    for row in cohort["rows"]:
        impl = row["implementation"]
        rank = row["rank_label"] + ("~" if row["within_noise"] else "")
        title = (_name(impl) + (" (baseline)" if impl["baseline"] else "") + (" †" if row.get("region_note") else "")
                 + (" ‡" if row.get("host_bound") else ""))
        usable = "yes" if impl["usable"] else impl.get("availability") or "no"  # "version not recorded", say
        table.add_row(rank, title, format_duration(row["median_ns"], 2), format_ratio(row["vs_first"]),
                      row["evidence"] + ("*" if row["stale"] else ""), usable, row["run_id"])
    notes = []
    if any(r["within_noise"] for r in cohort["rows"]):
        notes.append("~ within noise of the row above")
    if any(r["stale"] for r in cohort["rows"]):
        notes.append("* stale: observed more than 180 days ago")
    notes += [f"† {note}" for note in dict.fromkeys(r["region_note"] for r in cohort["rows"] if r.get("region_note"))]
    notes += [f"‡ {_name(r['implementation'])}: {r['host_bound']}" for r in cohort["rows"] if r.get("host_bound")]
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
        console.print(f"  {choice['slug']:<28} {choice['title']} · {choice['evidence_text']}", highlight=False)
    # The answer first (the first exact cohort, ranked in full); the rest folded to one line per cohort.
    exact = data["exact"]
    if exact:
        _cohort_block(exact[0])
    if len(exact) > 1:
        console.print(_leaders_table(f"{len(exact) - 1} more exact cohort(s), leaders only (--json or ki resolve "
                                     "with their axes for every row)", exact[1:]))
    if data["exact_total"] > len(data["exact"]):
        console.print(f"[dim]{data['exact_total'] - len(data['exact'])} more exact cohort(s) not listed; bind more "
                      "axes or add gpu:/mode: to narrow[/]", highlight=False)
    if data["nearest"]:
        _render_nearest(data["nearest"])
    _fold_other_protocols(data)
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
    if not hidden:  # only runs that are not ranked (superseded, under-sampled …): say which and why
        console.print(f"{cohort['label']} · {_axes(cohort)}: [dim]no ranked row[/]", highlight=False)
        _hidden_lines(cohort)
        return
    why = "; ".join(sorted({h["sentence"] for h in cohort["hidden_by_filters"]}))
    console.print(f"{cohort['label']} · {_axes(cohort)}: [dim]all {hidden} row(s) hidden by the filters — {why}[/]",
                  highlight=False)


def _hidden_lines(cohort: dict[str, Any]) -> None:
    for h in cohort["hidden_by_filters"]:
        console.print(f"  [dim]hidden: {h['implementation']} — {h['sentence']}[/]", highlight=False)
    for h in cohort["not_ranked"]:
        console.print(f"  [dim]not ranked: {h['implementation']} ({h['run_id']}) — {h['sentence']}[/]",
                      highlight=False)


def _leaders_table(title: str, cohorts: list[dict[str, Any]]) -> Table:
    labels = {c["label"] for c in cohorts}
    one_label = len(labels) == 1  # said once in the title, not on every row
    table = Table(title=f"{title}: {labels.pop()}" if one_label else title, title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False)
    for name in ("Workload" if one_label else "Cohort", "Leader", "Latency", "Ranks the", "Runs"):
        table.add_column(name, justify="right" if name in ("Latency", "Runs") else "left")
    for c in cohorts:
        leader = c.get("leader") or (c["rows"][0] if c.get("rows") else None)
        table.add_row(_axes(c) if one_label else f"{c['label']} · {_axes(c)}",
                      _name(leader["implementation"]) if leader else "—",
                      format_duration(leader["median_ns"], 2) if leader else "—", c["ranked_statistic"],
                      str(c["eligible_runs"]))
    return table


def _fold_other_protocols(data: dict[str, Any]) -> None:
    """Cohorts of another timed region are not the answer: one line saying how many, and how to see them."""
    other = data["other_protocols"]
    if not other:
        return
    modes = ", ".join(dict.fromkeys(c["mode"] for c in other))
    total = data.get("other_protocols_total", len(other))
    console.print(f"[dim]{total} cohort(s) measured it under another protocol ({modes}), not ranked against the "
                  f"exact ones: ki resolve {other[0]['query']}[/]", highlight=False)


def _render_nearest(nearest: dict[str, Any]) -> None:
    console.print(f"[bold]{nearest['message']}[/] — {nearest['note']}", highlight=False)
    for side in ("below", "above"):
        n = nearest[side]
        if not n:
            continue
        table = Table(title=f"{side}: {nearest['axis']} {n['value']} · ki resolve {n['query']}", title_justify="left")
        for name in ("Cohort", "Leader", "Latency", "Ranks the", "Runs"):
            table.add_column(name, justify="right" if name in ("Latency", "Runs") else "left")
        for c in n["leaders"]:
            leader = c["leader"]
            table.add_row(f"{c['label']} · {_axes(c)}", _name(leader["implementation"]) if leader else "—",
                          format_duration(leader["median_ns"], 2) if leader else "—", c["ranked_statistic"],
                          str(c["eligible_runs"]))
        console.print(table)


def _render_compatible(compatible: dict[str, Any]) -> None:
    table = Table(title=f"Compatible ({len(compatible['shown'])} of {compatible['total']})", title_justify="left")
    for name in ("Cohort", "Differs in", "Leader", "Latency", "Ranks the"):
        table.add_column(name, justify="right" if name == "Latency" else "left")
    for c in compatible["shown"]:
        diff = ", ".join(f"{m['field']} {m['observed']} (asked {m['requested']})" for m in c["mismatches"])
        leader = c["leader"]
        table.add_row(f"{c['label']} · {_axes(c)}", diff, _name(leader["implementation"]) if leader else "—",
                      format_duration(leader["median_ns"], 2) if leader else "—", c["ranked_statistic"])
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


NO_ATTAINABLE_FLOOR = "none: no runner measured this GPU and no verified run ran on it"


def render_run(d: dict[str, Any]) -> None:
    timing = d["timing"]
    rank = f"{d['rank_label']} of {d['cohort_size']}" if d["rank_label"] else "not ranked: " + "; ".join(
        r["sentence"] for r in d["not_ranked_reasons"])
    _kv(f"Run {d['run_id']} · {d['operation_title']}", [
        ("status", d["status"]), ("implementation", d["implementation"]["title"]),
        *_statistic_lines(timing, d.get("score")),
        ("rank", rank), ("vs #1", format_ratio(d["vs_first"])), ("cohort", d["cohort_label"]),
        ("workload", d["workload"]["label"]), ("gpu", d["gpu"]), ("evidence", d["evidence_sentence"]),
        ("license", d["implementation"]["license"]),
        ("install", d["implementation"]["install_command"] or "; ".join(
            r["sentence"] for r in d["implementation"]["not_usable_reasons"])),
        ("observed", _observed(d)),
        *[(FLOOR_NAMES[kind], f"{format_duration(d[f'{key}_ns'], 2)} · {format_ratio(d[f'{key}_ratio'])} above "
           "(estimate)" if d.get(f"{key}_ns") else absent)
          for kind, key, absent in ((PHYSICAL, "floor", None),
                                    (ATTAINABLE, "attainable_floor", NO_ATTAINABLE_FLOOR))],
        ("page", d["operation_url"]),
        *[(key, d[key]) for key in ("host_bound", "region_note", "capture_failure") if d.get(key)],
    ])
    if d.get("retraction"):
        console.print(f"[bold red]Retracted:[/] {d['retraction'].get('reason')}", highlight=False)
    console.print(f"[dim]next:[/] ki show operation {d['operation']}", highlight=False)


# The statistic a run reports, in the order a source may give one: a run timed by its mean (aiter, KernelBench,
# FlashInfer-Bench) shows its mean, never an empty median.
_STATISTICS = (("median", "median_ns"), ("mean", "mean_ns"), ("min", "min_ns"))


def _statistic_lines(timing: dict[str, Any], score: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    """The run's figures; a leaderboard score (seconds, as its source gives it) in µs/ms like every latency."""
    lines = [(f"score ({score['statistic']})", format_duration(score["value"] * 1e9, 2))] if score else []
    lines += [(label, format_duration(timing[key], 2)) for label, key in _STATISTICS if timing.get(key) is not None]
    if timing.get("std_ns") is not None:
        lines.append(("std", format_duration(timing["std_ns"], 2)))
    if timing.get("p20_ns") is not None or timing.get("p80_ns") is not None:
        lines.append(("p20–p80", f"{format_duration(timing.get('p20_ns'), 2)} – "
                                 f"{format_duration(timing.get('p80_ns'), 2)}"))
    return lines or [("median", "—")]


def _observed(d: dict[str, Any]) -> str:
    """The observed instant as the source wrote it: a source that recorded no time zone gets no 'UTC'."""
    text = d["observed_at"][:19].replace("T", " ")
    recorded = (d.get("source") or {}).get("time_zone_recorded", True)
    zone = " UTC" if recorded else ", time zone not recorded by the source"
    return text + zone + (" (stale)" if d["stale"] else "")


def render_operation(d: dict[str, Any]) -> None:
    console.print(f"[bold]{d['title']}[/] ({d['slug']}) · {d['eligible_runs']} eligible runs", highlight=False)
    for slot in d["headline"]:
        row = slot["row"]
        console.print(f"  {slot['title']}: {_name(row['implementation'])} {format_duration(row['median_ns'], 2)}"
                      f" {row.get('statistic', 'median')} · {slot['cohort_label']}", highlight=False)
    statistic = d["ranked"][0].get("statistic", "median") if d["ranked"] else "median"
    table = Table(title=f"Ranked (selected cohort) · ascending {statistic}", title_justify="left")
    for name in ("#", "Implementation", f"Time ({statistic})", "vs #1", "Evidence", "Run"):
        table.add_column(name, justify="left" if name in ("Implementation", "Evidence", "Run") else "right")
    for row in d["ranked"]:
        table.add_row(row["rank_label"] + (" ~" if row["within_noise"] else ""), _name(row["implementation"]),
                      format_duration(row["median_ns"], 2), format_ratio(row["vs_first"]), row["evidence"],
                      row["run_id"])
    console.print(table)
    _ranking_notes(d)
    if d["ranked"]:
        console.print(f"[dim]next:[/] ki show run {d['ranked'][0]['run_id']}", highlight=False)


def _ranking_notes(d: dict[str, Any]) -> None:
    """What the ranking orders by, and what to read before its ratios (the page says the same)."""
    if (d.get("cohort_line") or {}).get("ranked_statistic"):
        console.print(f"[dim]ranks the {d['cohort_line']['ranked_statistic']}[/]", highlight=False)
    for note in d.get("ranking_notes") or []:
        console.print(note["sentence"], highlight=False)
    for row in d["ranked"]:
        for said in (row.get("region_note"), row.get("host_bound")):
            if said:
                console.print(f"  [dim]{row['rank_label']} {_name(row['implementation'])}: {said}[/]",
                              highlight=False)


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
                      ("records held", _records_held(d))])


def _records_held(d: dict[str, Any]) -> str:
    paging = d.get("records_paging") or {}
    total = paging.get("total", len(d["records"]))
    return f"{total} (the site lists them {paging['per_page']} a page)" if paging.get("pages", 1) > 1 else str(total)


def render_records(d: dict[str, Any], limit: int = RECORDS_LIMIT) -> None:
    cohorts = d["cohorts"][:limit] if limit else d["cohorts"]
    events = d["events"][:limit] if limit else d["events"]
    table = Table(title=f"Records · {d['view']} · {len(d['cohorts'])} cohorts", title_justify="left")
    for name in ("Operation", "Workload", "Cohort", "Holder", "Time", "Statistic", "Margin", "Runs"):
        table.add_column(name, justify="right" if name in ("Time", "Margin", "Runs") else "left")
    for c in cohorts:
        leader = c["leader"] or {}
        table.add_row(c["operation"], c["workload_label"], c["label"], leader.get("implementation", "—"),
                      format_duration(leader.get("median_ns"), 2), leader.get("statistic", "—"),
                      format_ratio(c["margin_vs_second"]),
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


def render_sweep(sweep: dict[str, Any]) -> None:
    """Implementations across a workload sweep: one line per workload, one column per series, then what timed
    them (the same for all, or per series)."""
    series = sweep["series"]
    table = Table(title=f"Compare · {sweep['operation_title']} · {sweep['region']}", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("Workload")
    for s in series:
        table.add_column(s["label"], justify="right")
    table.add_column("Note")
    for row in sweep["rows"]:
        cells = []
        for c in row["cells"]:
            if not c["time_ns"]:
                cells.append("—")
                continue
            multiple = f" {format_ratio(c['multiple'])}" if c["multiple"] else ""
            mark = " *" if row["fastest"] == c["series"] else multiple
            cells.append(f"{format_duration(c['time_ns'], 2)}{mark}")
        table.add_row(row["workload_label"], *cells, row["note"] or "")
    console.print(table)
    for fact in sweep["facts"]:
        if fact["same"]:
            said = f"{fact['value']} (same for all)"
        else:
            said = " · ".join(f"{s['label']}: {', '.join(v) or 'not measured'}"
                              for s, v in zip(series, fact["by_series"], strict=True))
        console.print(f"{fact['label']}: {said}", highlight=False)
    console.print(sweep["summary"], highlight=False)
    console.print("* fastest in its row; a multiple is given only where every cell was timed alike.", style="dim",
                  highlight=False)


def render_compare(d: dict[str, Any]) -> None:
    if d.get("sweep"):
        render_sweep(d["sweep"])
        return
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


def render_reproduction(d: dict[str, Any]) -> None:
    """A source's reproduction court: one line per GPU, then the figures not reproduced."""
    console.print(f"Reproduction · {d['title']}", highlight=False)
    for gpu in d["gpus"]:
        console.print(gpu["summary"], highlight=False)
        for r in gpu["outliers"]:
            theirs, ours = format_duration(r["reported_ns"], 3), format_duration(r["reproduced_ns"], 3)
            console.print(f"  not reproduced: {r['operation']} · {r['implementation']} · reported {theirs} · "
                          f"reproduced {ours} · {r['ratio']:#.3g}× · {r['explanation']}", highlight=False)


RENDER_SHOW = {"operation": render_operation, "run": render_run, "implementation": render_implementation,
               "gpu": render_gpu, "reproduction": render_reproduction}


def emit(data: Any, as_json: bool, render: Any) -> None:
    """Print an answer: its JSON as is, or ``render`` over it with every string escaped for rich (the
    renderers put the data inside markup and tables, which rich reads as markup)."""
    if as_json:
        from kernelindex.cli.common import print_json  # typer's echo: the fast path prints tables only
        print_json(data)
    else:
        render(markup_safe(data))
