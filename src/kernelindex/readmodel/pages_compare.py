"""Compare (/compare?run=…&run=…): 2–8 runs side by side. A winner only when all share one
cohort; otherwise the first material difference (operation, workload, protocol, environment) is
named and no winner is declared (docs/design.md §1: only like is ranked with like).

Or implementations across a workload sweep (/compare?operation=…&impl=…&impl=…&gpu=…): ``mode`` is
"sweep" and ``sweep`` holds it (``readmodel.compare_sweep``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select

from kernelindex import urls
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import RunRow as RunTable
from kernelindex.domain.canonical import short_digest
from kernelindex.domain.units import format_duration
from kernelindex.readmodel import labels
from kernelindex.readmodel.compare_sweep import Sweep, compare_sweep
from kernelindex.readmodel.errors import BadParameter, NotFound
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.loading import OperationData, Run, load_operation, operation_slug_of
from kernelindex.readmodel.operation_model import operation_model
from kernelindex.readmodel.pages_common import RunRef, run_ref
from kernelindex.readmodel.run_facts import multiples_of_fastest

MIN_RUNS, MAX_RUNS = 2, 8


@dataclass
class ComparedRun(JsonModel):
    run: RunRef
    operation: str
    operation_title: str
    workload: str
    workload_label: str
    axes: dict[str, int]
    dtypes: dict[str, str]
    cohort: str
    cohort_label: str
    gpu_name: str
    timed_region: str
    harness: str
    status: str
    eligible: bool
    not_ranked_because: list[str]
    p20_ns: int | None
    p80_ns: int | None
    rank: str | None
    within_noise: bool
    install_command: str | None
    license: str | None
    url: str
    revision: str = ""  # the implementation revision's digest (two runs of one revision have no winner)
    floor_ns: float | None = None  # the physical floor (floor-v1, datasheet) of the run's region; an estimate
    floor_ratio: float | None = None
    attainable_floor_ns: float | None = None  # the attainable floor (the best bandwidth seen on the GPU)
    attainable_floor_ratio: float | None = None
    correctness: str = ""
    environment: str = ""
    runner: str | None = None  # the KernelIndex runner that measured it (None: its source reported it)
    protocol: str = ""  # the protocol's digest


@dataclass
class Difference(JsonModel):
    field: str
    sentence: str
    values: list[str]


@dataclass
class ComparePage(JsonModel):
    runs: list[ComparedRun]
    same_cohort: bool
    winner: str | None
    verdict: str
    difference: Difference | None = None
    multiples: dict[str, float] = field(default_factory=dict)  # run id → median / fastest median
    identical: list[str] = field(default_factory=list)  # fields every run shares (shown once)
    mode: str = "runs"  # runs: the runs named side by side; sweep: implementations across the workloads
    sweep: Sweep | None = None


def _locate(catalog: Catalog, run_id: str) -> tuple[OperationData, Run]:
    with catalog.engine.connect() as conn:
        op = conn.execute(select(RunTable.operation).where(RunTable.run_id == run_id)).scalar_one_or_none()
        if op is None:
            raise NotFound(f"no run {run_id!r} in the catalog (run ids are 16 hex digits)")
        slug = operation_slug_of(conn, op)
    data = load_operation(catalog, slug)
    latency = next((r for r in data.runs if r.run_id == run_id), None)
    if unreadable := next((why for digest, why in data.unreadable.items() if digest.startswith(f"sha256:{run_id}")),
                          None):
        raise BadParameter("run", f"run {run_id} is stored but cannot be read: {unreadable}")
    if latency is None:  # a leaderboard score or a peak-memory figure: nothing to put side by side in time
        what = "a leaderboard score" if any(r.run_id == run_id for r in data.score_runs) else "a peak-memory figure"
        raise BadParameter("run", f"run {run_id} is {what}, not a latency run; compare takes latency runs "
                                  f"(its evidence is at /runs/{run_id})")
    return data, latency


def _compared(data: OperationData, run: Run, now: datetime) -> ComparedRun:
    model = operation_model(data, now)
    cohort = model.cohorts[run.cohort_key]
    facts = model.run_facts(run)
    ranked = next((r for r in cohort.ranked if r.item.id == run.digest), None)
    wl = data.workloads[run.workload]
    protocol, env = data.protocols[run.protocol], data.environments[run.environment]
    usable = data.usability.get(run.implementation)
    return ComparedRun(
        run=run_ref(data, run, now), operation=data.slug,
        operation_title=data.title,
        workload=short_digest(run.workload), workload_label=labels.workload_label(data.operation, wl),
        axes=dict(wl.spec.axes), dtypes=dict(wl.spec.dtypes),
        cohort=short_digest(run.cohort_key), cohort_label=labels.cohort_label(env, protocol),
        gpu_name=labels.gpu_label(env), timed_region=protocol.spec.timed_region,
        harness=protocol.spec.harness.name, status=run.status, eligible=run.eligible,
        not_ranked_because=[r.sentence for r in (run.eligibility.reasons if run.eligibility else ())],
        p20_ns=run.p20_ns, p80_ns=run.p80_ns, rank=ranked.label if ranked else None,
        within_noise=bool(ranked and ranked.within_noise),
        install_command=usable.install_command if usable else None, license=usable.license if usable else None,
        url=urls.run(run.run_id), revision=run.implementation, runner=run.runner, protocol=run.protocol,
        floor_ns=facts.floor_ns, floor_ratio=facts.floor_ratio, attainable_floor_ns=facts.attainable_floor_ns,
        attainable_floor_ratio=facts.attainable_floor_ratio, correctness=_correctness(run),
        environment=_environment(data, run),
    )


def _correctness(run: Run) -> str:
    checked = run.spec.correctness
    if not checked.checked:
        return "not checked by the source"
    correctness = "passed" if checked.passed else "failed"
    if checked.relative_error is not None:
        correctness += f" (relative error {checked.relative_error:.1e})"
    return correctness


def _environment(data: OperationData, run: Run) -> str:
    software = data.environments[run.environment].spec.software
    return ", ".join(f"{k} {v}" for k, v in sorted(software.items())) or "software not recorded by the source"


# Fields shown once above the table when every run has the same value.
SHARED_FIELDS = ("operation_title", "workload_label", "timed_region", "harness", "gpu_name", "runner",
                 "cohort_label", "status", "license", "correctness", "environment")


def _told_apart(runs: list[ComparedRun]) -> list[ComparedRun]:
    """Runs of cohorts that read alike (two runners, one GPU and region) name what tells them apart."""
    shown = [labels.Shown(r.cohort_label, r.runner, r.protocol) for r in runs]
    for run, distinction in zip(runs, labels.tell_apart(shown), strict=True):
        run.cohort_label = labels.told(run.cohort_label, distinction)
    return runs


def _identical(runs: list[ComparedRun]) -> list[str]:
    return [f for f in SHARED_FIELDS if len({str(getattr(r, f)) for r in runs}) == 1]


def _first_difference(runs: list[ComparedRun]) -> Difference | None:
    checks = [
        ("operation", "They measure different operations", lambda r: r.operation_title),
        ("workload", "They measure different workloads", lambda r: r.workload_label),
        ("timed_region", "They time different regions", lambda r: r.timed_region),
        ("protocol", "They use different benchmark protocols", lambda r: r.harness),
        ("gpu", "They ran on different GPUs", lambda r: r.gpu_name),
        ("runner", "Different runners measured them", lambda r: r.runner or r.run.source),
        ("environment", "They ran in different software environments", lambda r: r.cohort_label),
        ("cohort", "They belong to different cohorts", lambda r: r.cohort),
    ]
    for name, sentence, value in checks:
        values = [value(r) for r in runs]
        if len(set(values)) > 1:
            return Difference(name, sentence + "; no winner is declared across cohorts.", values)
    return None


def _same_revision(runs: list[ComparedRun]) -> str | None:
    """Runs of one implementation revision are repeat measurements, never rivals."""
    if len({r.revision for r in runs}) != 1:
        return None
    medians = " vs ".join(format_duration(r.run.median_ns) for r in runs)
    lows = [r.p20_ns for r in runs if r.p20_ns is not None]
    highs = [r.p80_ns for r in runs if r.p80_ns is not None]
    noise = ""
    if len(lows) == len(highs) == len(runs):
        noise = ", within noise" if max(lows) <= min(highs) else ", apart beyond their p20–p80 intervals"
    count = "Two" if len(runs) == 2 else str(len(runs))
    return f"{count} runs of the same revision of {runs[0].run.implementation}: {medians}{noise}."


def _rank_number(run: ComparedRun) -> int:
    return int((run.rank or "0").rstrip("="))


def _verdict(runs: list[ComparedRun]) -> tuple[str | None, str]:
    same = _same_revision(runs)
    if same:
        return None, same
    ranked = [r for r in runs if r.rank is not None]
    if not ranked:
        return None, "None of these runs is eligible for ranking, so there is no winner."
    best = min(ranked, key=_rank_number)
    tied = [r for r in ranked if r.rank == best.rank]
    if len(tied) > 1:
        return None, f"Tied at rank {best.rank} in their cohort: " + ", ".join(r.run.run_id for r in tied) + "."
    runner_up = sorted((r for r in ranked if r is not best), key=_rank_number)
    noise = " (within noise of the next run)" if runner_up and runner_up[0].within_noise else ""
    return best.run.run_id, (f"{best.run.implementation} ({best.run.run_id}) is faster: rank {best.rank} in the "
                             f"shared cohort{noise}.")


def compare_page(catalog: Catalog, *, now: datetime, run: list[str] | None = None, impl: list[str] | None = None,
                 gpu: list[str] | None = None, operation: str | None = None, region: str | None = None) -> ComparePage:
    """Runs side by side (``run``), or implementations across a workload sweep (``impl``, with ``operation``,
    ``gpu`` and ``region``); not both."""
    if impl:
        if run:
            raise BadParameter("run", "give runs (run=…) or implementations (impl=…), not both")
        sweep = compare_sweep(catalog, operation, impl, gpu or [], region, now)
        return ComparePage(runs=[], same_cohort=False, winner=None, verdict=sweep.summary, mode="sweep", sweep=sweep)
    for name, value in (("operation", operation), ("region", region), ("gpu", gpu)):
        if value:
            raise BadParameter(name, f"{name} goes with impl=… (implementations across a workload sweep); runs "
                                     "compared by id need nothing else")
    return compare_runs(catalog, run or [], now=now)


def compare_runs(catalog: Catalog, run_ids: list[str], *, now: datetime) -> ComparePage:
    if not MIN_RUNS <= len(run_ids) <= MAX_RUNS:
        raise BadParameter("run", f"give between {MIN_RUNS} and {MAX_RUNS} runs (got {len(run_ids)}), or an operation "
                                  "and the implementations to compare across its workloads "
                                  "(operation=rope&impl=…&impl=…)")
    if len(set(run_ids)) != len(run_ids):
        raise BadParameter("run", "the same run is listed twice")
    clock = now
    runs = _told_apart([_compared(*_locate(catalog, rid), clock) for rid in run_ids])
    same = len({r.cohort for r in runs}) == 1
    page = ComparePage(runs=runs, same_cohort=same, winner=None, verdict="", identical=_identical(runs))
    if same:
        page.winner, page.verdict = _verdict(runs)
        page.multiples = multiples_of_fastest({r.run.run_id: r.run.median_ns for r in runs},
                                              {r.run.run_id for r in runs if r.eligible})
    else:
        page.difference = _first_difference(runs)
        page.verdict = page.difference.sentence if page.difference else "They belong to different cohorts."
    return page
