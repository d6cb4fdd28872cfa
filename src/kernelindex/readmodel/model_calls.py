"""One kernel call of a model's step, looked up in the catalog (issue 49): the operation that computes it,
the exact workload or the nearest measured one (named as such, with the axes that differ), the best usable
implementation on the asked GPU from the one recommendation rule (``readmodel.recommend``: verified cohort
first, else the default cohort), its evidence and statistic, and the floor of the call's own shapes
(``policy.floor``). Nothing here ranks or decides a floor: it reads the answers those rules give."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from kernelindex import registry, urls
from kernelindex.domain.manifests import manifest_json
from kernelindex.domain.units import format_duration
from kernelindex.policy.dispatch import Candidate, KernelCall, Step
from kernelindex.policy.floor import floor_estimate
from kernelindex.policy.measurement_requests import RequestSpec, workload_spec_for
from kernelindex.readmodel.cohorts import cohorts_of
from kernelindex.readmodel.errors import NotFound
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.labels import workload_key, workload_label
from kernelindex.readmodel.loading import OperationData, load_operation
from kernelindex.readmodel.operation_model import operation_model
from kernelindex.readmodel.recommend import UseAnswer
from kernelindex.registry import GpuSpec

NEAR = 2.0  # a nearest workload within this factor on every axis enters the step's estimate
STATUS_WORDS = {
    "exact": "exact workload, measured on this GPU",
    "nearest": "nearest measured workload on this GPU (not the call's shapes)",
    "other_gpu": "measured only on other GPUs",
    "not_measured": "not measured",
    "no_operation": "no catalog operation",
}
_RANK = {status: n for n, status in enumerate(STATUS_WORDS)}


@dataclass
class CallAnswer(JsonModel):
    """A call of the step with what the catalog knows of it on the asked GPU."""

    name: str
    kind: str
    count: int
    shape: dict[str, int]
    shape_label: str
    note: str
    status: str  # exact | nearest | other_gpu | not_measured | no_operation
    status_label: str
    operation: dict[str, Any] | None  # {slug, title, url}
    workload: dict[str, Any] | None  # the workload the figure is for: {key, label, axes, url}
    differs: list[dict[str, Any]] = field(default_factory=list)  # [{axis, call, measured}] for a nearest
    answer: UseAnswer | None = None  # the best usable run on the GPU (recommend's rule)
    statistic: str | None = None  # median | mean: what the figure is, as its cohort ranks it
    figure_ns: float | None = None
    figure: str = "—"
    floor: dict[str, Any] | None = None  # the floor of the call's own shapes on the GPU (estimate)
    floor_ns: float | None = None
    ratio: float | None = None  # the figure ÷ the floor of the workload it was measured on
    in_estimate: bool = False  # exact, or nearest within NEAR× on every axis
    step_ns: float | None = None  # figure × count (on this GPU, when in the estimate)
    step_floor_ns: float | None = None  # floor × count
    gap_ns: float | None = None  # step_ns − the measured workload's floor × count
    ask_url: str | None = None  # the site's ask form (a workload the catalog holds)
    ask_request: dict[str, Any] | None = None  # the body of POST /api/v1/requests (a workload it does not)
    elsewhere: str | None = None  # where else it was measured, in words
    source: str = ""  # the source of the run the figure comes from (its notice travels with the CSV)


def shape_label(call: KernelCall) -> str:
    s = call.shape
    if call.kind == "gemm":
        return f"M={s['M']} · N={s['N']} · K={s['K']}"
    return " · ".join(f"{k}={v}" for k, v in s.items())


def answer_call(catalog: Any, call: KernelCall, step: Step, gpu: GpuSpec, now: datetime) -> CallAnswer:
    base = CallAnswer(call.name, call.kind, call.count, dict(call.shape), shape_label(call), call.note,
                      "no_operation", STATUS_WORDS["no_operation"], None, None)
    found = []
    for candidate in call.candidates:
        try:
            data = load_operation(catalog, candidate.operation)
        except NotFound:
            continue
        found.append(_answer(data, candidate, replace(base), step, gpu, now))
    if found:  # the best-known of the operations that compute the call: exact first, then nearest …
        return min(found, key=lambda a: (_RANK[a.status], not a.in_estimate))
    if call.candidates:
        base.note = (base.note + "; " if base.note else "") + "the catalog holds no operation " + \
            " or ".join(c.operation for c in call.candidates)
    if call.kind == "gemm":
        base.floor, base.floor_ns = gemm_floor(call, step, gpu)
        base.step_floor_ns = base.floor_ns * base.count if base.floor_ns is not None else None
    return base


GEMM_TEMPLATE = "gemm-n4096-k4096"  # FlashInfer-Bench's dense GEMM contract, whose N and K a call replaces


def gemm_floor(call: KernelCall, step: Step, gpu: GpuSpec) -> tuple[dict[str, Any] | None, float | None]:
    """floor-v1 of a GEMM the catalog holds no definition for: FlashInfer-Bench's GEMM contract (C = A @ Bᵀ,
    2·M·N·K FLOPs) with the call's N and K, in the contract's dtype — the same floor rule, another shape."""
    template = registry.load_operation(GEMM_TEMPLATE)
    spec = registry.floor_spec(template, manifest_json(template)["spec"])
    n, k = call.shape["N"], call.shape["K"]
    spec = {**spec, "axes": {**spec["axes"], "n": {"role": "constant", "expression": str(n)},
                             "k": {"role": "constant", "expression": str(k)}}}
    request = RequestSpec(GEMM_TEMPLATE, {"m": call.shape["M"], "n": n, "k": k}, {}, gpu.slug, [], None, 1)
    floor = floor_estimate(spec, workload_spec_for(request, "", spec), gpu, region=step.region, operation="gemm")
    return ({**floor.to_json(), "label": "estimate, not evidence",
             "note": f"a GEMM of the call's shapes (no catalog definition gemm-n{n}-k{k})"}, floor.floor_ns)


def _answer(data: OperationData, candidate: Candidate, base: CallAnswer, step: Step, gpu: GpuSpec,
            now: datetime) -> CallAnswer:
    base.operation = {"slug": data.slug, "title": data.title, "url": urls.operation(data.slug)}
    exact = _exact_workload(data, candidate)
    base.floor, base.floor_ns = _call_floor(data, candidate, exact, step, gpu)
    base.step_floor_ns = base.floor_ns * base.count if base.floor_ns is not None else None
    on_gpu = _measured(data, gpu.slug, step.region)
    chosen = exact if exact in on_gpu else _nearest(data, candidate, on_gpu)
    if chosen is not None:
        base.status = "exact" if chosen == exact else "nearest"
        _figure(data, base, chosen, candidate, gpu, step, now)
    else:
        base.status = "other_gpu" if _measured(data, None, step.region) else "not_measured"
        if exact is not None:
            base.workload = _workload(data, exact)
        base.elsewhere = _elsewhere(data, exact, step.region)
    base.status_label = STATUS_WORDS[base.status]
    if base.status != "exact":
        _ask(data, base, candidate, exact, gpu, step)
    return base


def _figure(data: OperationData, base: CallAnswer, digest: str, candidate: Candidate, gpu: GpuSpec,
            step: Step, now: datetime) -> None:
    rec = operation_model(data, now).recommendation(digest, gpu, step.region)
    base.workload = _workload(data, digest)
    base.differs = _differs(data, digest, candidate)
    if not rec.answers:
        return
    answer = base.answer = rec.answers[0]
    cohort = next(c for c in cohorts_of(data).values() if c.key == answer.cohort_key)
    base.statistic = data.protocols[cohort.protocol].spec.statistic
    base.source = next((r.source for r in cohort.eligible if r.run_id == answer.run_id), "")
    base.figure_ns, base.figure = answer.median_ns, answer.median
    base.ratio = answer.floor_ratio
    base.in_estimate = all(d["measured"] and max(d["measured"] / d["call"], d["call"] / d["measured"]) <= NEAR
                           for d in base.differs)
    if not base.in_estimate:
        base.note = (base.note + "; " if base.note else "") + (
            f"the nearest measured workload is more than {NEAR:g}× away on an axis: shown, not in the estimate")
        return
    base.step_ns = answer.median_ns * base.count
    if answer.floor_ns:
        base.gap_ns = (answer.median_ns - answer.floor_ns) * base.count


def _exact_workload(data: OperationData, candidate: Candidate) -> str | None:
    """The workload with the call's key axes and the operation's constants (page counts and the like are
    layout, not the call's identity)."""
    roles = data.operation.spec.axes
    compared = {k: v for k, v in candidate.axes.items()
                if k in candidate.key or (k in roles and roles[k].role == "constant")}
    for digest, workload in sorted(data.workloads.items()):
        axes = workload.spec.axes
        if all(axes.get(k) == v for k, v in compared.items()) and _dtypes_fit(workload.spec.dtypes,
                                                                              candidate.dtypes):
            return digest
    return None


def _dtypes_fit(have: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    return all(have.get(k, v) == v for k, v in wanted.items())


def _measured(data: OperationData, gpu: str | None, region: str) -> set[str]:
    """Workloads with an eligible cohort in ``region`` (on ``gpu``, or on any GPU when None)."""
    found = set()
    for cohort in cohorts_of(data).values():
        if not cohort.eligible or data.protocols[cohort.protocol].spec.timed_region != region:
            continue
        on = data.gpu_of(cohort.environment)
        if gpu is None or (on is not None and on.slug == gpu):
            found.add(cohort.workload)
    return found


def _nearest(data: OperationData, candidate: Candidate, measured: set[str]) -> str | None:
    """The measured workload closest to the call along its key axes (log distance), the same dtypes;
    among equals one that does at least the call's work (an upper estimate) first."""
    scored = []
    for digest in measured:
        spec = data.workloads[digest].spec
        if not _dtypes_fit(spec.dtypes, candidate.dtypes):
            continue
        given = [(spec.axes.get(k), v) for k, v in candidate.axes.items() if k in candidate.key]
        pairs = [(have, v) for have, v in given if isinstance(have, int) and have > 0 and v > 0]
        if len(pairs) != len(given):
            continue
        roles = data.operation.spec.axes
        fixed = [k for k in candidate.axes if k in roles and roles[k].role == "constant" and k in spec.axes]
        if any(spec.axes[k] != candidate.axes[k] for k in fixed):
            continue
        distance = sum(abs(math.log(have / v)) for have, v in pairs)
        covers = all(have >= v for have, v in pairs)
        scored.append((round(distance, 9), not covers, workload_key(digest), digest))
    return min(scored)[3] if scored else None


def _differs(data: OperationData, digest: str, candidate: Candidate) -> list[dict[str, Any]]:
    axes = data.workloads[digest].spec.axes
    return [{"axis": k, "call": v, "measured": axes.get(k)} for k, v in candidate.axes.items()
            if k in candidate.key and axes.get(k) != v]


def _workload(data: OperationData, digest: str) -> dict[str, Any]:
    key = workload_key(digest)
    return {"key": key, "label": workload_label(data.operation, data.workloads[digest]),
            "axes": dict(data.workloads[digest].spec.axes), "url": urls.operation(data.slug, ("workload", key))}


def _bound_axes(data: OperationData, candidate: Candidate) -> dict[str, int]:
    """The call's axes as the operation declares them: its variable axes, and its constants."""
    axes = data.operation.spec.axes
    return {k: v for k, v in candidate.axes.items() if k in axes and axes[k].role != "derived"}


def _request(data: OperationData, candidate: Candidate, gpu: GpuSpec, step: Step) -> RequestSpec:
    variable = {k: v for k, v in _bound_axes(data, candidate).items()
                if data.operation.spec.axes[k].role == "variable"}
    return RequestSpec(data.slug, variable, dict(candidate.dtypes), gpu.slug, [step.region], None, 1)


def _call_floor(data: OperationData, candidate: Candidate, exact: str | None, step: Step,
                gpu: GpuSpec) -> tuple[dict[str, Any] | None, float | None]:
    """The physical floor of the call's own shapes on ``gpu`` (floor-v1, an estimate)."""
    try:
        if exact is not None:
            op_spec, wl_spec = data.specs_json(exact)
        else:
            op_spec = registry.floor_spec(data.operation, manifest_json(data.operation)["spec"])
            request = _request(data, candidate, gpu, step)
            constants = {k: v for k, v in _bound_axes(data, candidate).items() if k not in request.axes}
            full = RequestSpec(data.slug, {**request.axes, **constants}, request.dtypes, gpu.slug, [], None, 1)
            wl_spec = workload_spec_for(full, data.digest, op_spec)
        if not op_spec["inputs"] and not op_spec["outputs"]:
            return None, None
        floor = floor_estimate(op_spec, wl_spec, gpu, region=step.region, operation=data.slug)
    except (KeyError, ValueError, TypeError, ZeroDivisionError):
        return None, None
    return {**floor.to_json(), "label": "estimate, not evidence"}, floor.floor_ns


def _ask(data: OperationData, base: CallAnswer, candidate: Candidate, exact: str | None, gpu: GpuSpec,
         step: Step) -> None:
    if exact is not None:
        base.ask_url = urls.ask(data.slug, workload_key(exact), gpu.slug)
    else:  # a workload the catalog does not hold: the form takes its axes (and the API the same request)
        request = _request(data, candidate, gpu, step)
        base.ask_request = request.to_json()
        base.ask_url = urls.ask(data.slug, "", gpu.slug, ",".join(f"{k}={v}" for k, v in request.axes.items()),
                                ",".join(f"{k}={v}" for k, v in request.dtypes.items()))


def _elsewhere(data: OperationData, exact: str | None, region: str) -> str | None:
    gpus = sorted({g.short for c in cohorts_of(data).values() if c.eligible and (exact is None or c.workload == exact)
                   and data.protocols[c.protocol].spec.timed_region == region
                   for g in [data.gpu_of(c.environment)] if g is not None})
    if not gpus:
        return None
    what = "this workload" if exact is not None else "other workloads of the operation"
    return f"{what} measured on {', '.join(gpus)}"


def figure_words(ns: float | None) -> str:
    return format_duration(ns, 2) if ns is not None else "—"
