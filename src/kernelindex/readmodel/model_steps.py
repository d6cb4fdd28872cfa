"""One step of a model on one GPU, planned and summed (issue 49): the step the URL asks (phase, batch, sequence
or context, tensor-parallel degree; ``policy.dispatch``), its kernel calls (``policy.dispatch_map``), each
answered from the catalog (``readmodel.model_calls``), and the step's sum — the figures measured on that GPU ×
their counts, verified apart from reported, the floor of every call — with the biggest gaps first. The model
pages, ``ki model`` and the model challenges are projections of it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kernelindex.domain.architectures import ModelDefinition
from kernelindex.domain.numbers import parse_integer
from kernelindex.domain.units import format_duration
from kernelindex.policy.dispatch import PHASES, DispatchError, Step
from kernelindex.policy.dispatch_map import dispatch
from kernelindex.policy.evidence import VERIFIED_LEVELS
from kernelindex.readmodel.errors import BadParameter
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.model_calls import CallAnswer, answer_call
from kernelindex.registry import GpuSpec

STEP_PHASES: tuple[str, ...] = PHASES
DEFAULT_PHASE = "decode"
DEFAULTS = {"batch": 32, "seq": 4096, "tp": 1}
LIMITS = {"batch": 65_536, "seq": 1_048_576, "tp": 64}


@dataclass
class StepSummary(JsonModel):
    calls: int  # distinct calls of the step
    launches: int  # calls × layers
    estimate_ns: float | None  # Σ figure × count over the calls with a figure on this GPU
    estimate: str
    exact_ns: float  # the part from exact workloads
    nearest_ns: float  # the part from nearest measured workloads (other shapes: an approximation)
    verified_ns: float  # the part from verified or replicated runs
    reported_ns: float  # the part from reported (or reproducible) runs: not independently measured
    floor_ns: float | None  # Σ floor × count over every call with a floor
    floor: str
    covered_floor_ns: float | None  # Σ floor × count over the calls in the estimate
    ratio: float | None  # estimate ÷ covered floor
    missing: list[str]  # calls with no figure on this GPU (not in the estimate)
    no_floor: list[str]  # calls without a floor (not in the step's floor)
    statistics: list[str]  # the statistics the estimate adds (median, mean)
    statistic_note: str
    label: str = "estimate, not evidence"


@dataclass(frozen=True)
class StepPlan:
    """A step of a model on a GPU: its calls answered from the catalog, the dispatch map's notes, the sum and
    the gaps above the floor."""

    step: Step
    calls: list[CallAnswer]
    notes: list[str]
    summary: StepSummary
    gaps: list[dict[str, Any]]


def _integer(name: str, value: str | None) -> int:
    if value is None:
        return DEFAULTS[name]
    try:
        number = parse_integer(value, name)
    except ValueError as exc:
        raise BadParameter(name, str(exc)) from exc
    if not 1 <= number <= LIMITS[name]:
        raise BadParameter(name, f"{number} is out of range (1 to {LIMITS[name]:,})")
    return number


def step_of(phase: str | None, batch: str | None, seq: str | None, tp: str | None) -> Step:
    chosen = phase or DEFAULT_PHASE
    if chosen not in PHASES:
        raise BadParameter("phase", f"{chosen!r} is not one of {', '.join(PHASES)}")
    return Step(chosen, _integer("batch", batch), _integer("seq", seq), _integer("tp", tp))


def plan_step(catalog: Any, model: ModelDefinition, step: Step, gpu: GpuSpec, now: datetime) -> StepPlan:
    """The step's kernel calls on ``gpu``, each answered from the catalog, summed; a tensor-parallel degree the
    model's shapes do not divide is the ``tp`` parameter's error."""
    try:
        dispatched = dispatch(model.config, step)
    except DispatchError as exc:
        raise BadParameter("tp", str(exc)) from exc
    calls = [answer_call(catalog, call, step, gpu, now) for call in dispatched.calls]
    return StepPlan(step, calls, list(dispatched.notes), summarise(calls), gaps(calls))


def summarise(calls: list[CallAnswer]) -> StepSummary:
    with_figure = [c for c in calls if c.step_ns is not None]
    part = {"exact": 0.0, "nearest": 0.0, "verified": 0.0, "reported": 0.0}
    for c in with_figure:
        step_ns = c.step_ns or 0.0
        part[c.status] += step_ns
        verified = c.answer is not None and c.answer.evidence in VERIFIED_LEVELS
        part["verified" if verified else "reported"] += step_ns
    estimate = sum(c.step_ns or 0.0 for c in with_figure) if with_figure else None
    floors = [c.step_floor_ns for c in calls if c.step_floor_ns is not None]
    covered = [c.step_floor_ns for c in with_figure if c.step_floor_ns is not None]
    floor_ns = sum(floors) if floors else None
    covered_ns = sum(covered) if covered and len(covered) == len(with_figure) else None
    statistics = sorted({c.statistic for c in with_figure if c.statistic})
    note = ("One statistic throughout: every figure is a " + statistics[0] + "." if len(statistics) == 1 else
            "The estimate adds " + " and ".join(statistics) + " figures, each as its source reported it: not one "
            "statistic, so read it as an order of magnitude." if statistics else "Nothing measured to add.")
    return StepSummary(
        calls=len(calls), launches=sum(c.count for c in calls), estimate_ns=estimate,
        estimate=format_duration(estimate, 3) if estimate is not None else "—",
        exact_ns=part["exact"], nearest_ns=part["nearest"], verified_ns=part["verified"],
        reported_ns=part["reported"], floor_ns=floor_ns,
        floor=format_duration(floor_ns, 3) if floor_ns is not None else "—", covered_floor_ns=covered_ns,
        ratio=round(estimate / covered_ns, 3) if estimate and covered_ns else None,
        missing=[c.name for c in calls if c.step_ns is None],
        no_floor=[c.name for c in calls if c.step_floor_ns is None], statistics=statistics, statistic_note=note)


def gaps(calls: list[CallAnswer]) -> list[dict[str, Any]]:
    """Time above the floor per call over the step (figure − its workload's floor, × count), biggest first."""
    found = [c for c in calls if c.gap_ns is not None]
    found.sort(key=lambda c: (-(c.gap_ns or 0.0), c.name))
    return [{"name": c.name, "count": c.count, "gap_ns": c.gap_ns, "gap": format_duration(c.gap_ns, 2),
             "ratio": c.ratio, "status": c.status, "evidence": c.answer.evidence if c.answer else None}
            for c in found]
