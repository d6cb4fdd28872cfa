"""One campaign step in its own process: every reference case of the given operations × the runner's adapters ×
every region the case lists; one signed bundle per operation (``python3 -m kernelindex.campaigns.measure run``,
started by campaigns/drive.py with the step's deadline and time limit).

Cases come from ``prepare`` (a ``ki export`` of a catalog), ``prepare-bundles`` (the cases of shipped runner
bundles: a re-measurement) or ``ki runner campaign plan --out`` (what a GPU must measure): ``cases.jsonl`` (the
WorkloadCases, digests equal to the catalog's) and ``regions.json`` (workload digest → the regions to time).
Each step writes ``OUT/summary-<label>.json`` (every run's row and each operation's wall time) and, when cut by its
limit, ``OUT/cut-<label>.json`` (what is finished, so the next call measures only the rest); it exits 3 then.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from kernelindex import registry
from kernelindex.domain.manifests import digest_of, parse_manifest_text

RUNNER_SOURCE = "kernelindex-runner"


def prepare(export: Path, out: Path) -> dict[str, int]:
    """Reference cases (with runs from a source other than the runner) and their measured regions."""
    lines = export.read_bytes().splitlines()
    protocols: dict[str, str] = {}
    cases: dict[str, bytes] = {}
    regions: dict[str, set[str]] = {}
    for line in lines:
        data = json.loads(line)
        if data.get("kind") == "BenchmarkProtocol":
            protocols[digest_of(parse_manifest_text(line))] = data["spec"]["timed_region"]
        elif data.get("kind") == "WorkloadCase":
            cases[digest_of(parse_manifest_text(line))] = line
    for line in lines:
        data = json.loads(line)
        if data.get("kind") == "BenchmarkRun" and data["spec"]["source"]["name"] != RUNNER_SOURCE:
            regions.setdefault(data["spec"]["workload"], set()).add(protocols[data["spec"]["protocol"]])
    out.mkdir(parents=True, exist_ok=True)
    (out / "cases.jsonl").write_bytes(b"\n".join(cases[d] for d in sorted(regions)) + b"\n")
    (out / "regions.json").write_text(json.dumps({d: sorted(r) for d, r in sorted(regions.items())}, indent=1))
    return {"cases": len(regions), "case_regions": sum(len(r) for r in regions.values())}


def prepare_from_bundles(bundles: list[Path], out: Path) -> dict[str, int]:
    """The cases of shipped runner bundles and the regions their runs timed: a re-measurement of the same
    cases (protocol v3 over v2's verified runs). Each WorkloadCase line is kept byte for byte (same digest)."""
    cases: dict[str, bytes] = {}
    regions: dict[str, set[str]] = {}
    for folder in bundles:
        lines = (folder / "manifests.jsonl").read_bytes().splitlines()
        parsed: list[tuple[bytes, Any]] = [(line, parse_manifest_text(line)) for line in lines if line.strip()]
        protocols = {digest_of(m): m.spec.timed_region for _, m in parsed if m.kind == "BenchmarkProtocol"}
        for line, m in parsed:
            if m.kind == "WorkloadCase":
                cases[digest_of(m)] = line
            elif m.kind == "BenchmarkRun":
                regions.setdefault(m.spec.workload, set()).add(protocols[m.spec.protocol])
    out.mkdir(parents=True, exist_ok=True)
    (out / "cases.jsonl").write_bytes(b"\n".join(cases[d] for d in sorted(regions)) + b"\n")
    (out / "regions.json").write_text(json.dumps({d: sorted(r) for d, r in sorted(regions.items())}, indent=1))
    return {"cases": len(regions), "case_regions": sum(len(r) for r in regions.values())}


def load_cases(folder: Path, slug: str) -> tuple[list[Any], dict[str, tuple[str, ...]]]:
    from kernelindex.runner.report import workloads_from_file

    operation = registry.load_operation(slug)
    cases = sorted(workloads_from_file(folder / "cases.jsonl", operation), key=lambda w: sorted(w.spec.axes.items()))
    measured = json.loads((folder / "regions.json").read_text())
    return cases, {digest_of(w): tuple(measured[digest_of(w)]) for w in cases}


CUT_EXIT = 3  # the step's limit cut it: not done, the next call resumes it (campaigns/drive.py)


def cut_record(out: Path, label: str) -> dict[str, Any]:
    """Per operation of a cut step: the case labels finished (in bundles already written), the regions finished
    of cases cut part-way (``regions``: label → regions), and how many bundle parts were written, so the next
    call measures only the rest (runner/step_limit.py). A step writes it after every finished region too, so a
    step killed outright leaves it as true as a cut one."""
    path = out / f"cut-{label}.json"
    return json.loads(path.read_text()) if path.exists() else {}


def write_atomically(path: Path, text: str) -> None:
    """Write beside, then rename over: a step killed at any instant leaves the old file or the new one whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(f".{path.name}.new")
    staging.write_text(text)
    staging.replace(path)


def write_cut_record(out: Path, label: str, record: dict[str, Any]) -> None:
    path = out / f"cut-{label}.json"
    if record:
        write_atomically(path, json.dumps(record, indent=1, sort_keys=True))
    else:
        path.unlink(missing_ok=True)


def resumed_suffix(record: dict[str, Any], slug: str) -> str:
    """A resumed operation's bundle is a new part beside the cut one's (``-r1``, ``-r2``, …)."""
    parts = record.get(slug, {}).get("parts", 0)
    return f"-r{parts}" if parts else ""


def note_cut(record: dict[str, Any], slug: str, result: Any, *, wrote_bundle: bool) -> dict[str, Any]:
    """The record after one operation ran: a cut adds the cases it finished, the regions it finished of the
    case it was cut in (and a bundle part, when it wrote one); an operation that finished leaves the record.
    ``record`` is the one the run started from (``note_progress`` writes the same after every region)."""
    return note_progress(record, slug, result, wrote_bundle=wrote_bundle, done=not result.cut)


def note_progress(record: dict[str, Any], slug: str, result: Any, *, wrote_bundle: bool, done: bool) -> dict[str, Any]:
    """``record`` (as the run started) plus what ``result`` finished so far: whole cases in ``finished``, the
    regions of a case finished part-way in ``regions``; ``done`` leaves the record (the operation finished)."""
    from kernelindex.runner.verify import case_label

    rest = {k: v for k, v in record.items() if k != slug}
    if done:
        return rest
    entry = record.get(slug, {"finished": [], "parts": 0})
    finished = set(entry["finished"]) | {case_label(c.workload) for c in result.cases}
    regions = {label: set(rs) for label, rs in entry.get("regions", {}).items()}
    partial = getattr(result, "partial", None)
    if partial is not None:
        regions.setdefault(case_label(partial.workload), set()).update(o.region for o in partial.impls)
    new = {"finished": sorted(finished), "parts": entry["parts"] + int(wrote_bundle)}
    kept = {label: sorted(rs) for label, rs in sorted(regions.items()) if label not in finished and rs}
    if kept:
        new["regions"] = kept
    return {**rest, slug: new}


def _plan(args: argparse.Namespace) -> tuple[list[Any], list[Path]]:
    from kernelindex.runner.verify import case_label

    plan, outs = [], []
    record = cut_record(args.out, args.label)
    only = {tuple(x) for x in json.loads(args.only_cases.read_text())} if args.only_cases else None
    keys = args.impl.split(",") if args.impl else None
    for slug in args.operations.split(","):
        cases, regions = load_cases(args.cases, slug)
        if only is not None:
            cases = [w for w in cases if (slug, case_label(w)) in only]
        if args.smoke:
            cases = cases[:1]
        cases = cases[args.skip_cases:]
        if args.max_cases:
            cases = cases[:args.max_cases]
        if args.order == "reverse":
            cases = cases[::-1]
        if args.regions:
            regions = {d: tuple(r for r in rs if r in args.regions.split(",")) for d, rs in regions.items()}
        finished = set(record.get(slug, {}).get("finished", ()))
        cases = [w for w in cases if case_label(w) not in finished]
        done_regions = record.get(slug, {}).get("regions", {})  # cases cut part-way: only their other regions
        regions = {d: tuple(r for r in rs if r not in done_regions.get(case_label(w), ()))
                   for w in cases for d, rs in [(digest_of(w), regions[digest_of(w)])]}
        cases = [w for w in cases if regions[digest_of(w)]]
        if cases:
            plan.append((registry.load_operation(slug), cases, keys, regions))
            outs.append(args.out / "bundles" / f"{args.gpu_tag}-{slug}-{time.strftime('%Y%m%d')}{args.bundle_suffix}"
                        f"{resumed_suffix(record, slug)}")
    return plan, outs


def plan_only(args: argparse.Namespace) -> int:
    """What ``run`` would measure, without a device or a measurement: one line per operation (its cases,
    case-regions and implementations). Exit 1 when a step names no case, an unknown region or an
    implementation the runner does not have for the operation (a campaign's dry run)."""
    from kernelindex.runner.adapters import select
    from kernelindex.runner.campaign import operation_def
    from kernelindex.runner.definitions import REGIONS
    from kernelindex.runner.verify import case_label

    unknown = sorted(set(filter(None, args.regions.split(","))) - set(REGIONS))
    if unknown:
        print(f"unknown region(s) {', '.join(unknown)}; one of {', '.join(REGIONS)}")
        return 1
    plan, outs = _plan(args)
    found = {op.metadata.name for op, *_ in plan}
    for (op, cases, keys, regions), out in zip(plan, outs, strict=True):
        pairs = sum(len(regions[digest_of(w)]) for w in cases)
        try:
            chosen = [a.key for a in select(operation_def(op.metadata.name), keys)]
        except ValueError as exc:
            print(f"plan {op.metadata.name}: {exc}")
            return 1
        print(f"plan {op.metadata.name}: {len(cases)} cases, {pairs} case-regions, {', '.join(chosen)} -> {out.name}")
        for w in cases:
            print(f"  {case_label(w)}: {', '.join(regions[digest_of(w)])}")
    missing = [s for s in args.operations.split(",") if s not in found]
    for slug in missing:
        print(f"plan {slug}: no case left (skip {args.skip_cases}, max {args.max_cases}, regions {args.regions!r})")
    return 1 if missing or any(not sum(len(r[digest_of(w)]) for w in c) for _, c, _, r in plan) else 0


def _resumed_summary(args: argparse.Namespace, record: dict[str, Any]) -> dict[str, Any]:
    """The summary a cut step left (its rows so far), or a new one."""
    path = args.out / f"summary-{args.label}.json"
    summary: dict[str, Any] = json.loads(path.read_text()) if record and path.exists() \
        else {"operations": {}, "order": args.order}
    summary.pop("cut", None)  # the earlier call's cut: this call is cut only if it is cut itself (its exit code)
    return summary


def _write_summary(args: argparse.Namespace, summary: dict[str, Any]) -> None:
    text = json.dumps(summary, indent=1, sort_keys=True, default=str)
    write_atomically(args.out / f"summary-{args.label}.json", text)


def run(args: argparse.Namespace) -> dict[str, Any]:
    from rich.console import Console

    from kernelindex.runner.campaign import outcome_rows
    from kernelindex.runner.session import run_session
    from kernelindex.runner.step_limit import StepLimit, deadline_after_start
    from kernelindex.trust import keys

    started = time.perf_counter()
    limit = StepLimit(deadline_after_start(args.deadline_s) if args.deadline_s else None).install()
    runner = keys.load_public_key(args.key.with_name(keys.PUBLIC_KEY_FILE))
    plan, outs = _plan(args)
    record = cut_record(args.out, args.label)
    summary = _resumed_summary(args, record)
    console = Console(stderr=True, force_terminal=False, width=150) if args.progress else None
    for entry, out in zip(plan, outs, strict=True):
        op_started = time.perf_counter()
        slug = entry[0].metadata.name
        earlier = summary["operations"].get(slug) if slug in record else None

        def keep(result: Any, bundle: Any, *, slug: str = slug, earlier: Any = earlier,
                 op_started: float = op_started) -> None:
            """The summary's rows of what ``result`` holds (and the bundle that holds them), on disk."""
            summary["operations"][slug] = {
                "seconds": round(time.perf_counter() - op_started + (earlier["seconds"] if earlier else 0), 1),
                "runs": (earlier["runs"] if earlier else []) + outcome_rows(result),
                "skipped": result.skipped, "bundle": bundle.digest if bundle is not None else None,
            }
            _write_summary(args, summary)  # a cut-off campaign keeps what it did

        def checkpoint(result: Any, bundle: Any, *, slug: str = slug, start: dict[str, Any] = record) -> None:
            """After every finished region: its bundle is written (run_session); the record and the summary say
            so, so that a step killed outright resumes where it stood (the cut record as if cut now)."""
            keep(result, bundle)
            write_cut_record(args.out, args.label, note_progress(start, slug, result, wrote_bundle=True, done=False))

        session = run_session([entry], key_path=args.key, runner_name=runner.name, key_id=runner.key_id,
                              out_dirs=[out], time_budget_s=args.time_budget,
                              min_samples=args.min_samples, console=console, do_bench=args.do_bench,
                              write_bundles=not args.no_bundle, host_calls=args.host_calls,
                              test_device_product=args.test_device_product or None,
                              hard_limit_s=args.hard_limit, limit=limit, on_event=_event_printer(slug, started, limit),
                              on_checkpoint=checkpoint)
        result = session.results[0]
        keep(result, session.bundles[0] if session.bundles else None)
        record = note_cut(record, slug, result, wrote_bundle=bool(session.bundles))
        write_cut_record(args.out, args.label, record)
        summary["environment"] = session.environment.model_dump(mode="json")["spec"]
        print(f"{slug}: {len(result.runs())} runs in {summary['operations'][slug]['seconds']} s", flush=True)
        _write_summary(args, summary)
        _print_runs(slug, summary["operations"][slug]["runs"])
        if result.cut:
            _print_cut(slug, result, record)
            summary["cut"] = True
            break
    summary["total_s"] = round(time.perf_counter() - started, 1)
    _write_summary(args, summary)
    print(f"total {summary['total_s']} s")
    return summary


def _print_runs(slug: str, rows: list[dict[str, Any]]) -> None:
    for row in rows:
        _print_self_check(slug, row)
        if row["status"] != "passed":
            print(f"  {row['case']} {row['region']} {row['implementation']}: {row['status']} {row['detail'][:300]}")


def _print_cut(slug: str, result: Any, record: dict[str, Any]) -> None:
    part = result.partial
    regions = ", ".join(dict.fromkeys(o.region for o in part.impls)) if part is not None else ""
    kept = f" and {len(part.impls)} run(s) of the cut case ({regions})" if part is not None else ""
    print(f"{slug}: cut by the step's time limit after {len(result.cases)} more case(s){kept}; "
          f"{len(record[slug]['finished'])} finished in all, the rest resume on the next call", flush=True)


def _event_printer(slug: str, started: float, limit: Any = None) -> Any:
    """One line per event of the verification, with the seconds since the step started: where a step's time
    goes (each check, each region's setup, sampling, cross-check, host cost), in campaign.log as it happens.
    Also says when the step limit's SIGTERM handler was found gone at a safe point (and put back), and where."""
    said = [0]

    def on_event(kind: str, data: dict[str, Any]) -> None:
        at = f"[{time.perf_counter() - started:7.1f} s] {slug}"
        if limit is not None and limit.replaced > said[0]:
            said[0] = limit.replaced
            print(f"{at}: WARNING: the SIGTERM handler of the step limit was gone ({limit.replaced} time(s), "
                  f"last found at {limit.lost_at or 'a region end'}); put back", flush=True)
        if kind == "case":
            print(f"{at}: case {data['index'] + 1} of {data['total']}: {data['label']}", flush=True)
        elif kind == "phase":
            print(f"{at}:   {data['label']}: {data['seconds']:.1f} s", flush=True)
        elif kind == "case_done":
            print(f"{at}: case {data['index'] + 1} done", flush=True)
        elif kind == "cut":
            how = f" by {limit.cut_by}" if limit is not None and limit.cut_by else ""
            where = f" at {limit.cut_at}" if limit is not None and limit.cut_at else ""
            print(f"{at}: cut in case {data['index'] + 1} of {data['total']}{how}{where}", flush=True)
        elif kind in ("warning", "skipped"):
            what = data.get("message") or f"{data.get('adapter', '')} {data.get('reason', '')}"
            print(f"{at}: {kind}: {what}", flush=True)
    return on_event


def _print_self_check(slug: str, row: dict[str, Any]) -> None:
    """Protocol v3's self-check, one line per run: device time, the cross-check and whether they agree
    (required for capturable calls of at least 20 µs), the span, host syncs, wall time and host-bound."""
    if row.get("check_ns") is None or row.get("median_ns") is None:
        return
    agrees = {True: "agree", False: "DISAGREE", None: "-"}[row["check_agrees"]]
    print(f"  selfcheck {slug} | {row['case']} | {row['region']} | {row['implementation']} | "
          f"device {row['median_ns'] / 1e3:.2f} us | {row['check_method']} {row['check_ns'] / 1e3:.2f} us | "
          f"ratio {row['check_ns'] / row['median_ns']:.3f} | {agrees} | span {(row['span_ns'] or 0) / 1e3:.2f} us | "
          f"syncs {row['syncs']} | wall {(row['wall_ns'] or 0) / 1e3:.2f} us | "
          f"{'HOST-BOUND' if row['host_bound'] else 'device-bound'} | n {row['samples']}"
          f"{' UNDER-SAMPLED' if row['under_sampled'] else ''}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="KernelIndex runner campaign")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--export", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    b = sub.add_parser("prepare-bundles", help="the cases of shipped runner bundles (a re-measurement)")
    b.add_argument("bundles", type=Path, nargs="+")
    b.add_argument("--out", type=Path, required=True)
    r = sub.add_parser("run")
    r.add_argument("--cases", type=Path, required=True)
    r.add_argument("--key", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--operations", required=True)
    r.add_argument("--label", default="campaign")
    r.add_argument("--impl", default="")
    r.add_argument("--regions", default="")
    r.add_argument("--only-cases", type=Path, help="JSON list of [operation, case label] to keep "
                   "(ki runner campaign fidelity select)")
    r.add_argument("--order", choices=("forward", "reverse"), default="forward")
    r.add_argument("--smoke", action="store_true", help="the first case of each operation")
    r.add_argument("--max-cases", type=int, default=0, help="at most this many cases per operation (device budget)")
    r.add_argument("--skip-cases", type=int, default=0, help="leave out the first N cases (a later call's share)")
    r.add_argument("--bundle-suffix", default="", help="appended to the bundle folder's name (a second part)")
    r.add_argument("--gpu-tag", default="h200", help="the bundle folder's prefix: the GPU it was measured on")
    r.add_argument("--time-budget", type=float, default=1.0, help="seconds per case and region")
    r.add_argument("--min-samples", type=int, default=100)
    r.add_argument("--hard-limit", type=float, default=0.0,
                   help="seconds per case and region before min_samples stops it (0: 3x --time-budget)")
    r.add_argument("--deadline-s", type=float, default=0.0,
                   help="seconds after the process started at which the case in progress is cut at its next safe "
                        "point (between sample batches and phases), as SIGTERM would: a limit no library can "
                        "reset (0: none; SIGTERM stays the backstop)")
    r.add_argument("--host-calls", type=int, default=50, help="calls timed on the host, device drained before each")
    r.add_argument("--do-bench", action="store_true", help="also record triton's do_bench median")
    r.add_argument("--no-bundle", action="store_true", help="measure only (re-verification, order checks)")
    r.add_argument("--progress", action="store_true")
    r.add_argument("--plan-only", action="store_true", help="print the cases and case-regions, measure nothing")
    r.add_argument("--test-device-product", default="",
                   help="CPU smoke: real adapters on CPU tensors, nominal times (e.g. 'NVIDIA H200')")
    args = parser.parse_args(argv)
    if getattr(args, "deadline_s", 0) < 0:
        parser.error(f"--deadline-s {args.deadline_s:g}: the deadline is seconds after the step's start, so positive "
                     "(a script passes its timeout less a margin: give the step more time than the margin)")
    if args.command == "prepare-bundles":
        print(prepare_from_bundles(args.bundles, args.out))
        return 0
    if args.command == "prepare":
        print(prepare(args.export, args.out))
        return 0
    if args.plan_only:
        return plan_only(args)
    return CUT_EXIT if run(args).get("cut") else 0


if __name__ == "__main__":
    sys.exit(main())
