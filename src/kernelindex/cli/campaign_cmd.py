"""``ki runner campaign``: plan a GPU campaign from the shipped catalog, build its carry, run its steps (a dry
run on the CPU, a rehearsal on the CPU test device, or the device call itself), and ship what came back with its
supersessions and ledger; check and tabulate what came back (check, ceiling-check, tables, fidelity, calibrate).
docs/campaigns.md walks through one campaign."""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer

from kernelindex.cli.common import fail
from kernelindex.cli.console import plain_console

console = plain_console()
campaign_app = typer.Typer(help="GPU campaigns: plan, carry, run (and resume), ship with a ledger; check and "
                           "tabulate what the calls brought back.",
                           no_args_is_help=True)


@campaign_app.command("plan")
def plan_cmd(
    gpu: str = typer.Option(..., "--gpu", help="The GPU, as shipped runs name it or a part only it contains (H100)."),
    rule: str = typer.Option("older", "--rule", help="older: runs of a protocol older than --protocol on the GPU; "
                             "missing: calls verified on another GPU and not on this one."),
    protocol: str = typer.Option("4", "--protocol", help="The protocol version every current run should have."),
    operations: str = typer.Option("", "--operations", help="Only these operations (comma-separated)."),
    under_us: float | None = typer.Option(None, "--under-us", help="Only calls whose current run is faster than "
                                          "this many µs (on the GPU for older; on any GPU for missing)."),
    out: Path | None = typer.Option(None, "--out", help="Write the plan's cases here (cases.jsonl, regions.json, "
                                    "plan.json) for `carry --cases`."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """What a campaign on GPU must measure, per operation, and the steps that measure it."""
    from kernelindex.campaigns.selection import (
        plan,
        protocol_share,
        read_shipped,
        resolve_gpu,
        runner_operations,
        write_cases,
    )

    shipped = read_shipped()
    runner = runner_operations()
    try:
        product = resolve_gpu(gpu, shipped.gpus())
        found = plan(shipped, product, rule, protocol=protocol, runnable=runner,
                     operations=[o for o in operations.split(",") if o],
                     under_ns=under_us * 1000 if under_us is not None else None)
    except ValueError as exc:
        fail(str(exc), code=2)
    steps = found.steps(runner)
    runs, current = protocol_share(shipped, product, protocol, under_ns=under_us * 1000 if under_us else None)
    summary = {"gpu": product, "rule": rule, "protocol": protocol, "under_us": under_us, "steps": steps,
               "operations": {s: {"cases": len(o.regions), "case_regions": o.case_regions,
                                  "estimated_s": round(o.estimated_s)}
                              for s, o in sorted(found.operations.items())},
               "kernelbench_runs": found.kernelbench, "not_runnable": found.other,
               "runs_on_gpu": runs, "runs_under_protocol": current}
    if out is not None:
        summary["written"] = write_cases(found, shipped, out)
        (out / "plan.json").write_text(json.dumps(summary, indent=1) + "\n")
    if as_json:
        console.print_json(json.dumps(summary))
        return
    under = f", under {under_us:g} µs" if under_us is not None else ""
    console.print(f"{product}, rule {rule}{under} (protocol v{protocol}): {len(found.operations)} operations, "
                  f"{sum(o.case_regions for o in found.operations.values())} case-regions")
    share = f"{100 * current / runs:.1f}%" if runs else "-"
    faster = f" under {under_us:g} µs" if under_us is not None else ""
    console.print(f"  now: {current} of the GPU's {runs} current runs{faster} are protocol v{protocol} or newer "
                  f"({share})")
    for slug, op in sorted(found.operations.items()):
        console.print(f"  {slug}: {len(op.regions)} cases, {op.case_regions} case-regions, "
                      f"~{op.estimated_s:,.0f} s of GPU")
    for level, runs in sorted(found.kernelbench.items()):
        console.print(f"  KernelBench level {level}: {runs} runs")
    for slug, runs in sorted(found.other.items()):
        console.print(f"  {slug}: {runs} runs no campaign step measures (the runner has no definition)")
    console.print(f"steps: {' '.join(steps) or '(none)'}")


@campaign_app.command("carry")
def carry_cmd(
    key: list[str] = typer.Option(..., "--key", help="DIR (the default key) or TAG=DIR (the key of GPU TAG, e.g. "
                                  "h100=.keys/h100-runner1); each DIR holds runner.key and runner.pub."),
    out: Path = typer.Option(Path(".devcarry"), "--out", help="The carried folder (replaced)."),
    cases: list[str] = typer.Option([], "--cases", help="DIR (a plan's case folder, `plan --out`) or TAG=DIR (the "
                                    "plan of GPU TAG, e.g. h100=/tmp/plan-h100); default: every shipped runner "
                                    "bundle's cases."),
    wheels: Path | None = typer.Option(None, "--wheels", help="An earlier carry's whl/ instead of downloading."),
    steps: list[str] = typer.Option([], "--steps", help="TAG=STEPS (h200=\"probe softmax\"): the steps go.sh runs "
                                    "on that GPU when the call names none; one per GPU a call may land on."),
    with_flashinfer: bool = typer.Option(False, "--flashinfer", help="Carry FlashInfer 0.7.4, trimmed to its "
                                         "attention kernels (≈ 9 MiB), for the fi-* steps."),
    flashinfer_cache: Path = typer.Option(Path(".ficache"), "--flashinfer-cache", help="Where FlashInfer's pinned "
                                          "wheels are downloaded once (checked by SHA-256)."),
    flashinfer_kernels: Path | None = typer.Option(None, "--flashinfer-kernels", help="An earlier fi-build's "
                                                   "flashinfer-kernels-sm90a.tar.xz: no compile on this machine."),
) -> None:
    """Build the folder a device call carries (wheels, keys, case lists, steps, its entry go.sh; at most 64 MiB).
    The device command is then `bash .devcarry/go.sh SECONDS` (docs/runner.md)."""
    from kernelindex.campaigns.carry import CarryError, build, parse_cases, parse_keys, parse_steps

    try:
        console.print_json(json.dumps(build(out, parse_keys(key), cases=parse_cases(cases), wheels=wheels,
                                            steps=parse_steps(steps),
                                            flashinfer_cache=flashinfer_cache if with_flashinfer else None,
                                            flashinfer_kernels=flashinfer_kernels)))
    except CarryError as exc:
        fail(str(exc), code=2)


@campaign_app.command("run", context_settings={"allow_extra_args": False})
def run_cmd(
    seconds: float = typer.Argument(..., help="The call's budget for all its steps (a device call runs ≤ 600 s)."),
    steps: list[str] = typer.Argument(..., help="probe, compare, "
                                      "OP[:SKIP:MAX[:SUFFIX[:REGIONS[:LIMIT[:HARD[:IMPL]]]]]], "
                                      "OPS:SELECTION:IMPL[:SUFFIX[:LIMIT]], a GEMM/attention batch "
                                      "BATCH[:OPS[:IMPL]] (fi-decode, fi-prefill …), fi-setup, fi-build, or "
                                      "kernelbench:LEVELS:IMPLS[:SKIP:MAX] (docs/campaigns.md)."),
    work: Path = typer.Option(Path(os.environ.get("KI_WORK", "/tmp/ki-v4")), "--work",
                              help="This machine's campaign state: the steps done, cut records, bundles so far. "
                              "A second call with the same --work resumes."),
    out: Path = typer.Option(Path(os.environ.get("OUT", "out")), "--out", help="What comes back from the call."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print each step's plan, measure nothing (CPU)."),
    rehearse: str = typer.Option("", "--rehearse", help="A product name: run on the CPU test device (nominal times)."),
    tag: str = typer.Option("", "--tag", help="The bundles' GPU prefix (default: from the GPU nvidia-smi names; "
                            "h200 in a dry run or rehearsal)."),
    key: Path | None = typer.Option(Path(os.environ["KI_KEY"]) if os.environ.get("KI_KEY") else None, "--key",
                                    help="The runner's private key, runner.pub beside it (default: keys-TAG/runner.key "
                                    "when carried, else keys/runner.key)."),
) -> None:
    """Run the steps in order within SECONDS; a step done is skipped on the next call, a cut one resumes."""
    from kernelindex.campaigns.__main__ import make_call
    from kernelindex.campaigns.drive import run_campaign
    from kernelindex.campaigns.steps import StepError

    call = make_call(seconds, work=work, out=out, dry_run=dry_run, rehearse=rehearse,
                     compare=os.environ.get("KI_COMPARE", "").split(), tag=tag, key=key)
    call.say_to = typer.echo
    try:
        left = run_campaign(call, steps)
    except StepError as exc:
        fail(str(exc), code=2)
    if left:
        console.print(f"left for the next call: {' '.join(left)}")


@campaign_app.command("ship")
def ship_cmd(
    calls: list[Path] = typer.Argument(..., help="Each call's OUT folder, in the order they ran."),
    name: str = typer.Option(..., "--name", help="The campaign's name: its ledger is data/ledgers/NAME.md."),
    at: str = typer.Option(..., "--at", help="The supersessions' time (UTC, e.g. 2026-12-07T09:00:00Z)."),
    supersede: bool = typer.Option(True, "--supersede/--no-supersede",
                                   help="Append the supersessions the new runs make (older protocols, same GPU)."),
) -> None:
    """Verify and ship the calls' bundles, their supersessions and the campaign's ledger."""
    from kernelindex.campaigns.ledger import ShipError, ship
    from kernelindex.trust.bundles import BundleError

    try:
        shipment = ship(calls, name, at, supersede=supersede)
    except (ShipError, BundleError) as exc:
        fail(str(exc), code=2)
    runs = sum(b.runs for b in shipment.bundles)
    console.print(f"shipped {len(shipment.bundles)} bundles ({runs} runs), {len(shipment.supersessions)} "
                  f"supersessions; ledger data/ledgers/{name}.md")


@campaign_app.command("supersede")
def supersede_cmd(
    bundles: list[Path] = typer.Argument(..., help="The new bundles."),
    at: str = typer.Option(..., "--at", help="The supersessions' time (UTC)."),
    stream: bool = typer.Option(False, "--stream", help="v4 bundles: every older protocol's run of the same call "
                                "and GPU, any runner's."),
    rerun_of: Path | None = typer.Option(None, "--rerun-of", help="Supersede this bundle's runs that were not ranked."),
    reason: str | None = typer.Option(None, "--reason", help="With --rerun-of: what was fixed between the runs."),
    no_grad: bool = typer.Option(False, "--no-grad", help="KernelBench runs timed with autograd on."),
    upstream_one: bool = typer.Option(False, "--upstream-one", help="v3 runs whose backward began at a random "
                                      "scalar."),
) -> None:
    """Print the supersession lines the new bundles make (append them to data/supersessions.jsonl)."""
    from kernelindex.campaigns.supersede import lines

    for line in lines(bundles, at, upstream_one=upstream_one, no_grad=no_grad, rerun_of=rerun_of, reason=reason,
                      stream=stream):
        console.print(line, soft_wrap=True)


@campaign_app.command("ceilings")
def ceilings_cmd(check: bool = typer.Option(False, "--check", help="Exit 1 if the shipped file is stale.")) -> None:
    """Rewrite registry/measured_ceilings.yaml from the shipped v4 environments."""
    from kernelindex.campaigns.ceilings import main

    raise typer.Exit(main(["--check"] if check else []))


# The checks and tables read what calls brought back and what shipped; each keeps its own argparse options (its
# module runs on a GPU machine without typer too), so these commands hand every argument, --help included, to it.
PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


def _pass_through(module: str, ctx: typer.Context) -> None:
    from importlib import import_module

    raise typer.Exit(import_module(f"kernelindex.campaigns.{module}").main(list(ctx.args)) or 0)


@campaign_app.command("check", context_settings=PASS_THROUGH)
def check_cmd(ctx: typer.Context) -> None:
    """Check bundles before they ship: signature, runner key, the catalog's identities (--pub RUNNER.pub
    BUNDLE... [--database URL]); `check compare A B`: two runs of the same cases. --help for the options."""
    _pass_through("check_bundles", ctx)


@campaign_app.command("ceiling-check")
def ceiling_check_cmd(
    database: str = typer.Option("", "--database", help="The catalog to check (default: a fresh SQLite catalog of "
                                 "Liger and the verified bundles, made first: a few minutes)."),
) -> None:
    """Verified runs whose implied bandwidth exceeds their GPU's measured ceiling, and the records they hold
    (exit 1 if any holds one)."""
    import tempfile

    from kernelindex.bootstrap import ensure_bundled_data
    from kernelindex.catalog.db import open_catalog
    from kernelindex.readmodel.ceiling_report import check

    catalog = open_catalog(database or f"sqlite:///{Path(tempfile.mkdtemp()) / 'ceilings.sqlite'}")
    if not database:
        ensure_bundled_data(catalog, say=lambda line: None, parts=("liger", "verified"))
    raise typer.Exit(check(catalog))


@campaign_app.command("tables", context_settings=PASS_THROUGH)
def tables_cmd(ctx: typer.Context) -> None:
    """Figures from a call's summary-*.json: selfcheck, compare (replication), gemm-peak. --help for the options."""
    _pass_through("tables", ctx)


@campaign_app.command("fidelity", context_settings=PASS_THROUGH)
def fidelity_cmd(ctx: typer.Context) -> None:
    """Fidelity for a ledger: select a 1-in-N sample (for measure --only-cases), compare two processes' medians,
    cupti (on the GPU: median vs the sum of its kernels). --help for the options."""
    _pass_through("fidelity", ctx)


@campaign_app.command("calibrate", context_settings=PASS_THROUGH)
def calibrate_cmd(ctx: typer.Context) -> None:
    """KernelBench: what one GPU shared by K problem processes costs per problem, from a call's results
    (RESULTS_DIR [--solo DIR] [--workers K] [--budget S]). --help for the options."""
    _pass_through("calibration", ctx)


def register(app: typer.Typer) -> None:
    from kernelindex.cli.runner_cmds import runner_app

    runner_app.add_typer(campaign_app, name="campaign")
