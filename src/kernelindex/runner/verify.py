"""Verify implementations of one operation over workload cases: correctness, then timing per region.

For each case: every available adapter is checked for correctness on fresh inputs (outputs, and
gradients when a backward region is asked for). Then, region by region, the adapters that passed
for that region are timed together, interleaved, on one more fresh input set each, each
``torch.compile`` adapter compiled again from a clean dynamo state; ``do_bench``'s median is
recorded beside; a median under the region's floor-v1 datasheet floor is flagged. Every adapter
yields a BenchmarkRun per region, whatever its status.
"""

from __future__ import annotations

import contextlib
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from kernelindex import registry
from kernelindex.domain.manifests import (
    BenchmarkProtocol,
    BenchmarkRun,
    ExecutionEnvironment,
    ImplementationRevision,
    OperationSpec,
    WorkloadCase,
)
from kernelindex.policy.floor import Ceilings, floor_estimate
from kernelindex.runner import records
from kernelindex.runner.correctness import CheckResult, check
from kernelindex.runner.definitions import FIRST_COMPILED_CALL, Adapter, CompileRecord, OperationDef, PlanRecord
from kernelindex.runner.device_timing import CrossCheckResult
from kernelindex.runner.inputs import make_inputs
from kernelindex.runner.regions import needs_gradients, prepare_inputs, region_call
from kernelindex.runner.run_timing import samples_blob, timing_json
from kernelindex.runner.stream_setup import StreamDevice, StreamFacts, rotated_sampler
from kernelindex.runner.timing import Device, Measurement, Sampler, TimingPolicy, measure_interleaved

Event = Callable[[str, dict[str, Any]], None]
TIMING_SEED = 1_000_003


class RunnerDevice(Device, Protocol):
    torch_device: str

    def poison(self, sizes: list[int]) -> None: ...

    def release(self) -> None: ...


@dataclass
class ImplOutcome:
    adapter: Adapter
    implementation: ImplementationRevision
    region: str = "forward"
    status: str = "passed"
    check: CheckResult | None = None
    measurement: Measurement | None = None
    do_bench_ns: float | None = None
    error: str | None = None
    run: BenchmarkRun | None = None
    samples_blob: bytes | None = None
    first_call_ns: float | None = None
    compile: CompileRecord | None = None  # an ahead-of-time compile its bind did (XLA), not in first_call_ns
    plan: PlanRecord | None = None  # the plan its call runs on (FlashInfer), made by its bind, not in first_call_ns
    checks_compile_ns: int | None = None  # torch.compile: the checks' first call (cold for this case's shapes)
    peak_bytes: int | None = None
    cross_check: CrossCheckResult | None = None  # v3: the same call by graph replay or per-call events
    host_cost: tuple[float, float] | None = None  # v3: (wall, host CPU) ns per call
    distinct_ids: dict[str, int] = field(default_factory=dict)  # index input → distinct values in the timed inputs
    stream: StreamFacts | None = None  # v4: how the stream time was taken (rotation, capture)
    kernel_busy: tuple[float, int, float | None] | None = None  # v4: v3's device time (median, samples, span)


@dataclass
class CaseOutcome:
    workload: WorkloadCase
    floors: dict[str, float | None] = field(default_factory=dict)
    impls: list[ImplOutcome] = field(default_factory=list)

    @property
    def floor_ns(self) -> float | None:  # the forward floor (older callers)
        return self.floors.get("forward")


@dataclass
class Context:
    operation: OperationSpec
    op: OperationDef
    protocols: dict[str, BenchmarkProtocol]
    environment: ExecutionEnvironment
    device: RunnerDevice
    policy: TimingPolicy
    runner: dict[str, str]
    campaign: str
    do_bench: Callable[[Callable[[], object]], float | None] | None = None
    on_event: Event | None = None
    check_trials: int = 3
    ceilings: Ceilings | None = None
    # Called at safe points inside a case with where it stands; a campaign's step limit cuts there (StepLimit.check).
    safe_point: Callable[[str], None] | None = None

    def emit(self, kind: str, **data: Any) -> None:
        if self.on_event is not None:
            self.on_event(kind, data)

    def safe(self, where: str) -> None:
        if self.safe_point is not None:
            self.safe_point(where)


def case_label(workload: WorkloadCase) -> str:
    """Axes, params and dtypes: two cases that differ only in a param (dyt with and without beta) must not
    share a label, since the run's external id and title are made from it."""
    axes = " ".join(f"{k}={v}" for k, v in workload.spec.axes.items())
    params = " ".join(f"{k}={v}" for k, v in sorted((workload.spec.params or {}).items()))
    dtypes = " ".join(sorted(set(workload.spec.dtypes.values())))
    return " ".join(part for part in (axes, params, dtypes) if part)


def floor_ns(operation: OperationSpec, workload: WorkloadCase, product: str, region: str = "forward",
             measured: Ceilings | None = None, distinct_ids: dict[str, int] | None = None) -> float | None:
    gpu = registry.gpu_for_product(product)
    if gpu is None:
        return None
    op = registry.floor_spec(operation, operation.model_dump(mode="json")["spec"])
    wl = workload.model_dump(mode="json")["spec"]
    return floor_estimate(op, wl, gpu, region=region, operation=operation.slug, measured=measured,
                          distinct_ids=distinct_ids).floor_ns


def _error(exc: BaseException) -> str:
    last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = f" at {last[0].filename.rsplit('/', 1)[-1]}:{last[0].lineno}" if last else ""
    return f"{type(exc).__name__}: {exc}{where}"[:500]


def _check(ctx: Context, workload: WorkloadCase, adapter: Adapter, gradients: bool) -> tuple[CheckResult | None, str]:
    try:
        return check(ctx.operation, workload, ctx.op, adapter.bind, in_place=adapter.in_place,
                     device=ctx.device.torch_device, trials=ctx.check_trials, poison=ctx.device.poison,
                     gradients=gradients), ""
    except Exception as exc:  # noqa: BLE001 - a crashing implementation is a result, not a crash
        return None, _error(exc)


def _timing_context(device: RunnerDevice) -> contextlib.AbstractContextManager[object]:
    context = getattr(device, "timing_context", None)
    return context() if context is not None else contextlib.nullcontext()


def _setup(ctx: Context, workload: WorkloadCase, o: ImplOutcome) -> tuple[Callable[[], object], Sampler]:
    """Fresh inputs, the region's call, its first call (compilation) and peak memory, the sampler."""
    inputs = make_inputs(ctx.op, workload, TIMING_SEED, ctx.device.torch_device)
    o.distinct_ids = {name: int(inputs[name].unique().numel()) for name in ctx.op.index_inputs}
    grads = ctx.op.grads_of(inputs)
    prepare_inputs(inputs, grads)
    ctx.device.synchronize()
    start = ctx.device.wall_ns()
    bound = o.adapter.bind(inputs)
    o.compile, o.plan = o.adapter.bind_compile(), o.adapter.bind_plan()
    if o.compile is not None or o.plan is not None:  # recorded on their own: the first call starts after them
        start = ctx.device.wall_ns()
    call = region_call(o.region, bound, inputs, grads)
    result = call()
    ctx.device.synchronize()
    o.first_call_ns = float(ctx.device.wall_ns() - start)
    peak = getattr(ctx.device, "peak_memory_bytes", None)
    if peak is not None:
        o.peak_bytes = peak(call, list(inputs.values()))
    device = ctx.device
    if not isinstance(device, StreamDevice):  # a v3 device (tests' fakes): device time per call
        return call, device.sampler(call)

    def another_set(seed: int) -> Callable[[], object]:
        more = prepare_inputs(make_inputs(ctx.op, workload, seed, ctx.device.torch_device), grads)
        return region_call(o.region, o.adapter.bind(more), more, grads)
    sampler, o.stream = rotated_sampler(device, call, inputs, result, another_set, TIMING_SEED)
    return call, sampler


def _time(ctx: Context, workload: WorkloadCase, outcomes: list[ImplOutcome]) -> None:
    calls: dict[str, Callable[[], object]] = {}
    samplers: dict[str, Sampler] = {}
    with _timing_context(ctx.device):
        for o in outcomes:
            ctx.safe(f"{o.region}: setup {o.adapter.key}")
            started = time.perf_counter()
            try:
                calls[o.adapter.key], samplers[o.adapter.key] = _setup(ctx, workload, o)
            except Exception as exc:  # noqa: BLE001
                o.status, o.error = "runtime_error", f"timing setup failed: {_error(exc)}"
                ctx.emit("warning", message=f"{o.adapter.title} ({o.region}): {o.error}")
            ctx.emit("phase", label=f"{o.region}: setup {o.adapter.key} (inputs, first call, peak memory)",
                     seconds=time.perf_counter() - started)
        timed = [o for o in outcomes if o.adapter.key in samplers]
        started = time.perf_counter()
        results = _measure(ctx, calls, samplers, timed)
        counts = ", ".join(f"{key} {len(m.samples)}" for key, m in results.items())
        ctx.emit("phase", label=f"{outcomes[0].region}: warm-up and interleaved samples ({counts})",
                 seconds=time.perf_counter() - started)
        for o in timed:
            o.measurement = results.get(o.adapter.key)
            if o.measurement is not None:
                ctx.safe(f"{o.region}: cross-check and host cost {o.adapter.key}")
                started = time.perf_counter()
                _v3_extras(ctx, o, calls[o.adapter.key])
                ctx.emit("phase", label=f"{o.region}: cross-check and host cost {o.adapter.key}",
                         seconds=time.perf_counter() - started)
            if o.measurement is not None and ctx.do_bench is not None:
                ctx.safe(f"{o.region}: do_bench {o.adapter.key}")
                try:
                    o.do_bench_ns = ctx.do_bench(calls[o.adapter.key])
                except Exception as exc:  # noqa: BLE001 - the secondary figure is optional
                    ctx.emit("warning", message=f"{o.adapter.title}: do_bench failed ({_error(exc)})")
    del calls, samplers
    ctx.device.release()


def _v3_extras(ctx: Context, o: ImplOutcome, call: Callable[[], object]) -> None:
    """The cross-check and the host cost, where the device offers them (CUDA, v3). Either failing is
    said as a warning and left out of the run, never a failed run: the figure is the device time. The cache is
    emptied first: a capture allocates its calls' temporaries anew (batch-127 paged decode: out of memory)."""
    cross, host = getattr(ctx.device, "cross_check", None), getattr(ctx.device, "host_cost", None)
    busy = getattr(ctx.device, "kernel_busy", None) if o.stream is not None else None
    try:
        ctx.device.release()
        if busy is not None:
            o.kernel_busy = busy(call)
        if cross is not None:
            o.cross_check = CrossCheckResult(*cross(call))
        if host is not None:
            o.host_cost = host(call, ctx.policy.host_calls)
    except Exception as exc:  # noqa: BLE001
        ctx.emit("warning", message=f"{o.adapter.title}: cross-check or host cost failed ({_error(exc)})")


def _measure(ctx: Context, calls: dict[str, Callable[[], object]], samplers: dict[str, Sampler],
             timed: list[ImplOutcome]) -> dict[str, Measurement]:
    region = timed[0].region if timed else ""

    def between(where: str) -> None:
        ctx.safe(f"{region}: {where}")
    try:
        return measure_interleaved(calls, samplers, ctx.device, ctx.policy, between=between)
    except Exception:  # noqa: BLE001 - isolate the implementation that fails
        results: dict[str, Measurement] = {}
        for o in timed:
            key = o.adapter.key
            try:
                results.update(measure_interleaved({key: calls[key]}, {key: samplers[key]}, ctx.device, ctx.policy,
                                                   between=between))
            except Exception as exc:  # noqa: BLE001
                o.status, o.error = "runtime_error", f"timing failed: {_error(exc)}"
        return results


def verify_case(
    ctx: Context, workload: WorkloadCase, adapters: list[tuple[Adapter, ImplementationRevision]],
    regions: tuple[str, ...] = ("forward",),
    on_region: Callable[[CaseOutcome, str], None] | None = None,
) -> CaseOutcome:
    """Check every adapter once (gradients too when a backward region is asked), then time each region.
    ``on_region(case, region)`` is called as soon as a region's runs are in ``case.impls``: each region is a
    protocol of its own, so a caller can keep a finished region when the rest of the case is cut."""
    product = ctx.device.name
    case = CaseOutcome(workload, {r: floor_ns(ctx.operation, workload, product, r) for r in regions})
    checks: dict[str, tuple[CheckResult | None, str]] = {}
    compile_ns: dict[str, int | None] = {}
    for adapter, _ in adapters:
        ctx.safe(f"check {adapter.key}")
        adapter.start_case()
        ctx.emit("step", label=f"check {adapter.key}")
        started = time.perf_counter()
        checks[adapter.key] = _check(ctx, workload, adapter, needs_gradients(regions))
        compile_ns[adapter.key] = adapter.state.get(FIRST_COMPILED_CALL)
        ctx.emit("phase", label=f"check {adapter.key}", seconds=time.perf_counter() - started)
    for region in regions:
        ctx.safe(f"{region}: start")  # also puts back a SIGTERM handler the case's checks replaced
        started = time.perf_counter()
        outcomes = []
        for adapter, impl in adapters:
            result, error = checks[adapter.key]
            o = ImplOutcome(adapter=adapter, implementation=impl, region=region, check=result, error=error or None,
                            checks_compile_ns=compile_ns[adapter.key])
            if result is None:
                o.status = "runtime_error"
            elif not result.passed_for(region):
                o.status = "incorrect_numerical"
            outcomes.append(o)
        passing = [o for o in outcomes if o.status == "passed"]
        for o in passing:
            o.adapter.start_case()  # torch.compile: a clean dynamo state for every (case, region)
        if passing:
            ctx.emit("step", label=f"{region}: timing " + ", ".join(o.adapter.key for o in passing))
            _time(ctx, workload, passing)
        for o in outcomes:
            _finish(ctx, workload, case, o)
        case.impls.extend(outcomes)
        ctx.emit("phase", label=f"{region} done", seconds=time.perf_counter() - started)
        if on_region is not None:
            on_region(case, region)
    return case


def _below_floor(ctx: Context, workload: WorkloadCase, case: CaseOutcome, o: ImplOutcome, median: float) -> str:
    """Why the median is not credible, or "": under the datasheet floor (status), or under the
    floor from the ceilings measured on this device (said in the run). A backward that only scales the
    gradient its forward computed skips the traffic its region's floor counts: no floor applies to it
    (the read model's ``skips_floor_traffic`` rule, here at measurement time)."""
    if o.region == "backward" and o.adapter.forward_computes_gradient:
        return ""
    floor = case.floors.get(o.region)
    if o.distinct_ids and floor is not None:  # the rows this run's gather read, not the expectation
        floor = floor_ns(ctx.operation, workload, ctx.device.name, o.region, distinct_ids=o.distinct_ids)
    if floor is not None and median < floor:
        return "datasheet"
    if ctx.ceilings is not None:
        measured = floor_ns(ctx.operation, workload, ctx.device.name, o.region, ctx.ceilings, o.distinct_ids or None)
        if measured is not None and median < measured:
            return "measured"
    return ""


def _finish(ctx: Context, workload: WorkloadCase, case: CaseOutcome, o: ImplOutcome) -> None:
    observed = datetime.now(UTC).replace(microsecond=0)
    stamp = observed.isoformat().replace("+00:00", "Z")
    timing: dict[str, Any] = {}
    artifacts: dict[str, str] = {}
    if o.measurement is not None and o.status == "passed":
        o.samples_blob = samples_blob(o, workload, stamp)
        timing = timing_json(o, o.samples_blob, ctx.policy.min_samples)
        artifacts["samples"] = timing["samples_digest"]
        below = _below_floor(ctx, workload, case, o, timing["median_ns"])
        if timing["median_ns"] < 1:
            o.status, o.error, timing, artifacts = "runtime_error", "no GPU activity in the call's trace", {}, {}
            o.samples_blob = None
        elif below == "datasheet":
            o.status = "suspected_reward_hack"
        elif below == "measured":
            timing["raw"]["exceeds_measured_ceiling"] = (
                "median under the floor from the best bandwidth (copy, read-only, write-only) measured here")
    correctness = records.correctness_json(o.check, o.error, o.region)
    if o.error and o.check is not None:
        correctness["detail"] = f"{correctness.get('detail', '')}; {o.error}".strip("; ")
    case_id = case_label(workload).replace(" ", ",")
    external_id = f"{ctx.campaign}/{ctx.operation.metadata.name}/{case_id}/{o.region}/{o.adapter.key}"
    o.run = records.run_manifest(
        implementation=o.implementation, workload=workload, protocol=ctx.protocols[o.region],
        environment=ctx.environment, status=o.status, timing=timing, correctness=correctness, observed_at=observed,
        external_id=external_id, runner=ctx.runner, artifacts=artifacts,
        title=f"{o.adapter.title} · {ctx.operation.metadata.name} · {o.region} · {case_label(workload)}",
    )


