"""The models pages (issue 49): ``/models`` lists the shipped model definitions; ``/models/{slug}`` maps one
step of a model (phase, batch, sequence or context, tensor-parallel degree) on one GPU to every kernel call
(``policy.dispatch_map``), each looked up in the catalog (``readmodel.model_calls``), and sums the step:
the figures measured on that GPU × their counts, the floor of every call, the biggest gaps first. A sum
that adds medians to means says so; reported figures are counted apart from verified ones."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kernelindex import registry, urls
from kernelindex.domain.architectures import ModelDefinition
from kernelindex.domain.numbers import parse_integer
from kernelindex.domain.units import format_duration
from kernelindex.policy.dispatch import PHASES, DispatchError, Step
from kernelindex.policy.dispatch_map import dispatch
from kernelindex.policy.evidence import VERIFIED_LEVELS
from kernelindex.readmodel.errors import BadParameter, NotFound
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.model_calls import CallAnswer, answer_call

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


@dataclass
class ModelPage(JsonModel):
    model: dict[str, Any]
    step: dict[str, Any]
    gpu: dict[str, Any]
    calls: list[CallAnswer]
    summary: StepSummary
    gaps: list[dict[str, Any]]
    notes: list[str]
    cli: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class ModelsIndex(JsonModel):
    models: list[dict[str, Any]]
    note: str


def model_json(model: ModelDefinition) -> dict[str, Any]:
    c = model.config
    return {"slug": model.slug, "title": model.title, "url": urls.model(model.slug), "aliases": list(model.aliases),
            "popular": model.popular, "source": model.source.model_dump(), "license": model.license.model_dump(),
            "config": c.model_dump(exclude_none=True),
            "attention": "multi-head latent attention" if c.mla else "grouped-query attention",
            "experts": c.experts, "top_k": c.num_experts_per_tok}


def models_index(catalog: Any, *, now: datetime) -> ModelsIndex:
    models = [model_json(m) for m in registry.model_definitions().values()]
    return ModelsIndex(models, "Architecture numbers are copied from each model's published config.json, "
                               "named by field; each page maps one step to its kernel calls.")


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


def model_page(catalog: Any, slug: str, *, now: datetime, gpu: str | None = None, phase: str | None = None,
               batch: str | None = None, seq: str | None = None, tp: str | None = None) -> ModelPage:
    model = registry.model_definitions().get(slug)
    if model is None:
        raise NotFound(f"no model {slug!r}; the models are listed at {urls.MODELS}")
    step = step_of(phase, batch, seq, tp)
    spec = _gpu(gpu)
    try:
        plan = dispatch(model.config, step)
    except DispatchError as exc:
        raise BadParameter("tp", str(exc)) from exc
    calls = [answer_call(catalog, call, step, spec, now) for call in plan.calls]
    return ModelPage(
        model=model_json(model),
        step={"phase": step.phase, "batch": step.batch, "seq": step.seq, "tp": step.tp, "dtype": step.dtype,
              "page_size": step.page_size, "tokens": step.tokens, "region": step.region,
              "seq_means": "context length (tokens in the KV cache)" if step.phase == "decode" else "sequence length"},
        gpu={"slug": spec.slug, "label": spec.short, "name": spec.name, "bandwidth_gbps": spec.bandwidth_gbps,
             "url": urls.gpu(spec.slug)},
        calls=calls, summary=summarise(calls), gaps=gaps(calls), notes=list(plan.notes),
        cli=f"ki model {model.slug} --gpu {spec.slug} --{step.phase} --batch {step.batch} "
            f"--{'ctx' if step.phase == 'decode' else 'seq'} {step.seq} --tp {step.tp}",
        options={"phases": list(PHASES), "gpus": sorted(registry.gpus())},
    )


def _gpu(name: str | None) -> registry.GpuSpec:
    slug = registry.gpu_slug(name) if name else registry.priority_gpus()[0]
    spec = registry.gpus().get(slug or "")
    if spec is None:
        raise BadParameter("gpu", f"{name!r} is not a GPU of the datasheet table (e.g. h100, h200, b200)")
    return spec


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
