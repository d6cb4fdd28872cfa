"""One device call of a campaign: a queue of steps run in order within the call's seconds, each step's results
packed into ``OUT`` as soon as it ends (a call cut by the device's limit keeps them).

Steps done on this machine are recorded in ``WORK/done`` and skipped, so a later call on the still-warm machine
continues where the earlier one stopped (a fresh machine starts again: plan from the shipped catalog, which then
holds what came back). Each step gets the seconds left less a margin, at most its own limit; its process gets a
deadline ``DEADLINE_MARGIN`` s before that, at which the runner cuts the case in progress at its next safe point
without a signal (runner/step_limit.py), SIGTERM at the limit and SIGKILL 15 s later stay the backstops. A cut step
exits 3: its finished cases and regions are in its bundle and its cut record, and the next call measures the rest.

Every step's outcome is one line of ``OUT/ledger.jsonl`` (``ki runner campaign ship`` turns the calls' lines into
the campaign's ledger). The GPU the machine reports names the bundles (``h100-…``, ``h200-…``) and picks the key:
``keys-TAG/runner.key`` when carried, else ``keys/runner.key``.

Runs from the carried folder (``ki runner campaign carry``): ``src/`` importable,
``cases/``, ``cases-gemm/``, ``kernelbench-cases.json``, ``keys/``, and ``flashinfer/`` when FlashInfer travels.
Once ``fi-setup`` has unpacked FlashInfer on the machine, every measuring step's process imports it (as the runner's
adapters find it: an adapter of a library that is absent is skipped) and reuses its kernel cache.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernelindex.campaigns import flashinfer
from kernelindex.campaigns.kernelbench import has_current_result
from kernelindex.campaigns.steps import Step, expand, parse

DEADLINE_MARGIN = 25  # the longest profiled batch seen (~16 s, fused-moe) plus writing the bundle and summary
STEP_RESERVE = 20  # seconds of the call kept back from each step (packing, the ledger)
MIN_STEP_S = 40  # a step is not started with less
KILL_AFTER_S = 15
CUT_EXIT = 3
OUTCOMES = {0: "done", CUT_EXIT: "cut", 137: "killed", 143: "killed"}


@dataclass
class Call:
    """One device call: its budget, its folders and the machine's GPU."""

    budget_s: float
    work: Path
    out: Path
    gpu: str = ""  # the product nvidia-smi names; empty in a dry run or rehearsal
    tag: str = "h200"
    key: Path = Path("keys/runner.key")
    cases: Path = Path("cases")
    gemm_cases: Path = Path("cases-gemm")
    kernelbench_cases: Path = Path("kernelbench-cases.json")
    dry_run: bool = False
    rehearse: str = ""  # a product name: the CPU test device (real adapters, nominal times)
    compare: list[str] = field(default_factory=list)
    flashinfer_carried: Path = Path(flashinfer.CARRIED)
    # git-ignored beside the carried folder and never carried: the package and its kernel cache stay on a warm machine
    flashinfer_home: Path = Path(os.environ.get("KI_FI_HOME", "../.fi"))
    python: str = sys.executable
    started: float = field(default_factory=time.monotonic)
    say_to: Callable[[str], None] = print

    def left(self) -> float:
        return self.budget_s - (time.monotonic() - self.started)

    def say(self, text: str) -> None:
        line = f"[{time.monotonic() - self.started:.0f} s] {text}"
        self.say_to(line)
        with (self.out / "run.log").open("a") as log:
            log.write(line + "\n")


def machine_gpu() -> str:
    """The first GPU's name as nvidia-smi gives it; empty without one."""
    try:
        found = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                               text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return found.stdout.strip().splitlines()[0] if found.returncode == 0 and found.stdout.strip() else ""


def log_clocks(out: Path) -> None:
    """The GPU's clocks, temperature and power as the call starts, at the head of its log."""
    with (out / "run.log").open("a") as log:
        subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,"
                        "temperature.gpu,power.draw", "--format=csv"], stdout=log, stderr=subprocess.STDOUT,
                       check=False)


def key_for(tag: str, carried: Path = Path(".")) -> Path:
    """The runner key of the GPU: ``keys-TAG/runner.key`` when the carry holds one, else ``keys/runner.key``."""
    own = carried / f"keys-{tag}" / "runner.key"
    return own if own.exists() else carried / "keys" / "runner.key"


def cases_for(tag: str, carried: Path = Path(".")) -> Path:
    """The plan of the GPU: ``cases-TAG/`` when the carry holds one, else ``cases/``."""
    own = carried / f"cases-{tag}"
    return own if own.is_dir() else carried / "cases"


def run_bounded(argv: list[str], seconds: float, log: Path, env: dict[str, str] | None = None) -> int:
    """``argv`` for at most ``seconds``: SIGTERM then, SIGKILL ``KILL_AFTER_S`` later; its exit status as a shell
    gives it (128 + the signal for one that killed it)."""
    with log.open("ab") as handle:
        process = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT, env=env)
        try:
            status = process.wait(timeout=max(1.0, seconds))
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGTERM)
            try:
                status = process.wait(timeout=KILL_AFTER_S)
            except subprocess.TimeoutExpired:
                process.kill()
                status = process.wait()
    return 128 - status if status < 0 else status


def _plan_only(call: Call, argv: list[str]) -> int:
    """A dry run's step: the plan printed and logged, nothing measured."""
    found = subprocess.run(argv, capture_output=True, text=True)
    for line in (found.stdout + found.stderr).splitlines():
        call.say(line)
    return found.returncode


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra}


def _measure_argv(call: Call, step: Step, step_s: float, cases: Path, label: str) -> list[str]:
    argv = [call.python, "-m", "kernelindex.campaigns.measure", "run", "--cases", str(cases), "--key", str(call.key),
            "--time-budget", "0.5", "--host-calls", "20", "--min-samples", "50", "--gpu-tag", call.tag,
            "--out", str(call.work / "c"), "--hard-limit", str(step.hard_s), "--label", label,
            "--operations", ",".join(step.operations), f"--bundle-suffix={step.bundle_suffix}",
            "--deadline-s", str(int(step_s - DEADLINE_MARGIN))]
    if step.kind == "operation":
        argv += ["--skip-cases", str(step.skip), "--max-cases", str(step.most), "--regions", step.regions]
    else:
        argv += ["--only-cases", str(cases / f"{step.selection}.json")]
    if step.impl:
        argv += ["--impl", step.impl]
    if call.rehearse:
        argv += ["--test-device-product", call.rehearse]
    return argv


def _measure(call: Call, step: Step, seconds: float) -> int:
    step_s = min(seconds, step.limit_s)
    cases = call.cases if step.kind == "operation" else call.gemm_cases
    argv = _measure_argv(call, step, step_s, cases, step.label)
    if call.dry_run:
        return _plan_only(call, [*argv, "--plan-only"])
    home = call.flashinfer_home.resolve()
    with_flashinfer = flashinfer.env(home) if flashinfer.is_set_up(home) else {}
    rc = run_bounded(argv, step_s, call.out / "campaign.log",
                     _env(XLA_PYTHON_CLIENT_PREALLOCATE="false", **with_flashinfer))
    if "flashinfer" in step.impl:
        for line in flashinfer.summary_lines(call.work / "c")[-40:]:
            call.say(line)
    return rc


def _flashinfer_setup(call: Call) -> int:
    home = call.flashinfer_home.resolve()
    if call.dry_run or call.rehearse:
        call.say(f"plan fi-setup: unpack {call.flashinfer_carried / flashinfer.TRIMMED} into {home / 'site'}")
        return 0
    return flashinfer.setup(call.flashinfer_carried, home, call.say)


def _flashinfer_build(call: Call, seconds: float) -> int:
    """FlashInfer's kernel modules built and checked (its output in build.log, what a reader needs in run.log);
    the modules come back in OUT for the lane's other GPU, the build's cost in the step's ledger line."""
    argv = [call.python, "-m", "kernelindex.campaigns.flashinfer_build"]
    if call.dry_run or call.rehearse:
        return _plan_only(call, [*argv, "--print-plan"])
    home = call.flashinfer_home.resolve()
    if not flashinfer.is_set_up(home):
        call.say(f"fi-build: FlashInfer is not unpacked in {home}: run fi-setup first")
        return 2
    log = call.out / "build.log"
    start = log.stat().st_size if log.exists() else 0
    rc = run_bounded([*argv, "--out", str(call.out / flashinfer.BUILD_SUMMARY)], seconds, log,
                     _env(**flashinfer.env(home)))
    with log.open("rb") as handle:
        handle.seek(start)
        for line in handle.read().decode(errors="replace").splitlines():
            if not line.startswith("[") and "INFO" not in line:  # ninja's progress and FlashInfer's log stay there
                call.say(line)
    modules = flashinfer.pack_kernels(home, call.out)
    call.say(f"fi-build: {modules} kernel modules for the other GPU in {flashinfer.KERNELS} "
             f"({(call.out / flashinfer.KERNELS).stat().st_size} bytes)")
    return rc


def _probe(call: Call, seconds: float) -> int:
    if call.dry_run or call.rehearse:
        call.say("plan probe: v4 ceilings and the shortest call")
        return 0
    code = "from kernelindex.runner.session import _device; _device(10, True, None)"
    return run_bounded([call.python, "-c", code], seconds, call.out / "probe.log")


def _compare(call: Call, seconds: float) -> int:
    if call.dry_run or call.rehearse:
        call.say(f"plan compare: {' '.join(call.compare)}")
        return 0
    argv = [call.python, "-m", "kernelindex.campaigns.stream_compare", "--cases", str(call.cases),
            "--out", str(call.out / "stream-compare.json"), *call.compare]
    return run_bounded(argv, seconds, call.out / "compare.log")


def _kernelbench(call: Call, step: Step, seconds: float) -> int:
    """The step's problems, each in its own process; then one bundle per level, remade from every result."""
    results = call.work / "kb"
    folder = results / "results" / step.impl.replace(",", "+")
    if not call.kernelbench_cases.is_file():
        call.say(f"{step.text}: no {call.kernelbench_cases} (ki runner campaign carry writes it)")
        return 1
    left = _problems_without_result(call, step, folder)
    if call.dry_run:
        call.say(f"plan {step.text}: {len(left)} problems of levels {step.levels} without a result, {step.impl}")
        return 0 if left else 1
    argv = [call.python, "-m", "kernelindex.campaigns.kernelbench", "run", "--cases", str(call.kernelbench_cases),
            "--out", str(results), "--levels", step.levels, "--impl", step.impl, "--skip", str(step.skip),
            "--max", str(step.most), "--budget", str(int(seconds - 10)), "--time-limit", "300",
            "--workers-per-gpu", os.environ.get("KI_WORKERS_PER_GPU", "1")]
    if call.rehearse:
        argv += ["--test-device-product", call.rehearse, "--min-samples", "20", "--warmup-calls", "1",
                 "--warmup-ms", "0"]
    rc = run_bounded(argv, seconds, call.out / "campaign.log")
    missing = len(_problems_without_result(call, step, folder))
    call.say(f"{step.text}: {missing} problems of the step without a result")
    if call.key.exists():
        for level in step.levels.split(","):
            name = f"{call.tag}-kernelbench-level{level}-{step.impl.replace(',', '-')}-{time.strftime('%Y%m%d')}"
            shutil.rmtree(call.work / "c" / "bundles" / name, ignore_errors=True)
            run_bounded([call.python, "-m", "kernelindex.campaigns.kernelbench", "bundle", "--cases",
                         str(call.kernelbench_cases), "--results", str(results), "--impl", step.impl, "--levels",
                         level, "--key", str(call.key), "--bundle", str(call.work / "c" / "bundles" / name)],
                        120, call.out / "campaign.log")
    return rc if rc or not missing else CUT_EXIT


def _problems_without_result(call: Call, step: Step, folder: Path) -> list[dict[str, Any]]:
    levels = {int(x) for x in step.levels.split(",")}
    cases = [c for c in json.loads(call.kernelbench_cases.read_text())["cases"] if c["level"] in levels][step.skip:]
    cases = cases[:step.most] if step.most else cases
    return [c for c in cases if not has_current_result(folder / f"{c['level']}-{c['number']}.json")]


def _bundles(call: Call) -> dict[str, int]:
    """The bundles written so far on this machine and when (a checkpoint rewrites one in place)."""
    root = call.work / "c" / "bundles"
    return {p.name: (p / "bundle.json").stat().st_mtime_ns for p in sorted(root.glob("[!.]*"))
            if (p / "bundle.json").exists()} if root.exists() else {}


def ship(call: Call) -> None:
    """Everything so far into OUT, re-packed after every step (few files come back from a device call)."""
    root = call.work / "c"
    with tarfile.open(call.out / "bundles.tgz", "w:gz") as tar:
        for bundle in sorted((root / "bundles").glob("[!.]*")) if (root / "bundles").exists() else []:
            tar.add(bundle, arcname=f"bundles/{bundle.name}")
    with tarfile.open(call.out / "summaries.tgz", "w:gz") as tar:
        for path in sorted([*root.glob("summary-*.json"), *root.glob("cut-*.json")]):
            tar.add(path, arcname=path.name)
    kernelbench = call.work / "kb"
    if kernelbench.exists():
        with tarfile.open(call.out / "results.tgz", "w:gz") as tar:
            for part in ("results", "environments"):
                if (kernelbench / part).exists():
                    tar.add(kernelbench / part, arcname=part)
    probe = Path(os.environ.get("KI_PROBE_CACHE", call.work / "probe.json"))
    if probe.exists():
        shutil.copy(probe, call.out / "probe.json")


def _record(call: Call, step: str, rc: int | None, seconds: float, bundles: list[str], outcome: str,
            note: str = "") -> None:
    entry: dict[str, Any] = {"at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "gpu": call.gpu,
                             "tag": call.tag, "step": step, "rc": rc, "outcome": outcome, "seconds": round(seconds, 1),
                             "bundles": bundles, "left_s": round(call.left()), "dry_run": call.dry_run,
                             "rehearsal": call.rehearse}
    if note:
        entry["note"] = note
    with (call.out / "ledger.jsonl").open("a") as ledger:
        ledger.write(json.dumps(entry, sort_keys=True) + "\n")


def run_step(call: Call, step: Step, seconds: float) -> int:
    if step.kind == "probe":
        return _probe(call, seconds)
    if step.kind == "compare":
        return _compare(call, seconds)
    if step.kind == "fi-setup":
        return _flashinfer_setup(call)
    if step.kind == "fi-build":
        return _flashinfer_build(call, seconds)
    if step.kind == "kernelbench":
        return _kernelbench(call, step, seconds)
    return _measure(call, step, seconds)


def selection_operations(folder: Path) -> dict[str, list[str]]:
    """Selection name → its operations, sorted (the GEMM & attention case folder's ``NAME.json`` files)."""
    return {p.stem: sorted({op for op, _ in json.loads(p.read_text())})
            for p in sorted(folder.glob("*.json")) if p.name != "regions.json"} if folder.exists() else {}


def run_campaign(call: Call, words: list[str]) -> list[str]:
    """Run the steps (batches expanded) in order; the steps still to do when the call ends (the next call's)."""
    call.work.mkdir(parents=True, exist_ok=True)
    (call.work / "c").mkdir(exist_ok=True)
    call.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("KI_PROBE_CACHE", str(call.work / "probe.json"))
    if call.gpu:
        log_clocks(call.out)
    done_file = call.work / "done"
    done_file.touch()
    batches = selection_operations(call.gemm_cases)
    texts = [text for word in words for text in expand(word, batches)]
    steps = [parse(text) for text in texts]  # every step parses before the first one runs
    left = []
    for index, step in enumerate(steps):
        if step.text in done_file.read_text().splitlines():
            call.say(f"skip {step.text} (done in an earlier call)")
            _record(call, step.text, None, 0.0, [], "done earlier")
            continue
        seconds = call.left() - STEP_RESERVE
        if seconds < MIN_STEP_S:
            call.say(f"stop before {step.text}: {seconds:.0f} s left")
            _record(call, step.text, None, 0.0, [], "not started")
            left = [s.text for s in steps[index:]]
            break
        before, began = _bundles(call), time.monotonic()
        rc = run_step(call, step, seconds)
        after = _bundles(call)
        written = [name for name, stamp in after.items() if before.get(name) != stamp]
        outcome = OUTCOMES.get(rc, "failed")
        call.say(f"{step.text} rc={rc} ({outcome}){_explain(outcome)}")
        _record(call, step.text, rc, time.monotonic() - began, written, outcome, _note(call, step))
        if rc == 0:
            with done_file.open("a") as done:
                done.write(step.text + "\n")
        else:
            left.append(step.text)
        ship(call)
    call.say(f"end, {call.left():.0f} s of the call's budget left")
    return left


def _note(call: Call, step: Step) -> str:
    """What the ledger keeps beside a step's outcome: the FlashInfer build's cost."""
    if step.kind == "fi-build" and not call.dry_run and not call.rehearse:
        return flashinfer.build_note(call.out / flashinfer.BUILD_SUMMARY)
    return ""


def _explain(outcome: str) -> str:
    if outcome == "cut":
        return ": the finished cases and regions are in its bundle; the next call measures the rest"
    if outcome == "killed":
        return ": the regions finished before it are in its bundle; the next call on this machine resumes"
    return ""
