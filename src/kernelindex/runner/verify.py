"""Verify implementations of one operation over workload cases: correctness, then timing.

For each case: every available adapter is checked for correctness on fresh inputs; the ones that
pass are timed together, interleaved, on one more fresh input set each; ``do_bench``'s median is
recorded beside; a median under the floor-v1 datasheet floor is flagged. Every adapter that ran
yields a BenchmarkRun, whatever its status.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from pydantic import BaseModel

from kernelindex import registry
from kernelindex.domain.canonical import bytes_digest, canonical_bytes
from kernelindex.policy.floor import floor_estimate
from kernelindex.runner import records
from kernelindex.runner.adapters import Adapter
from kernelindex.runner.correctness import CheckResult, check
from kernelindex.runner.inputs import make_inputs
from kernelindex.runner.reference import REFERENCES
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
    implementation: BaseModel
    status: str = "passed"
    check: CheckResult | None = None
    measurement: Measurement | None = None
    do_bench_ns: float | None = None
    error: str | None = None
    run: BaseModel | None = None
    samples_blob: bytes | None = None


@dataclass
class CaseOutcome:
    workload: BaseModel
    floor_ns: float | None
    impls: list[ImplOutcome] = field(default_factory=list)


@dataclass
class Context:
    operation: BaseModel
    protocol: BaseModel
    environment: BaseModel
    device: RunnerDevice
    policy: TimingPolicy
    runner: dict[str, str]
    campaign: str
    do_bench: Callable[[Callable[[], object]], float | None] | None = None
    on_event: Event | None = None
    check_trials: int = 3

    def emit(self, kind: str, **data: Any) -> None:
        if self.on_event is not None:
            self.on_event(kind, data)


def case_label(workload: BaseModel) -> str:
    axes = " ".join(f"{k}={v}" for k, v in workload.spec.axes.items())
    dtypes = " ".join(sorted(set(workload.spec.dtypes.values())))
    return f"{axes} {dtypes}".strip()


def floor_ns(operation: BaseModel, workload: BaseModel, product: str) -> float | None:
    gpu = registry.gpu_for_product(product)
    if gpu is None:
        return None
    op = operation.model_dump(mode="json")["spec"]
    wl = workload.model_dump(mode="json")["spec"]
    return floor_estimate(op, wl, gpu).floor_ns


def _error(exc: BaseException) -> str:
    last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = f" at {last[0].filename.rsplit('/', 1)[-1]}:{last[0].lineno}" if last else ""
    return f"{type(exc).__name__}: {exc}{where}"[:500]


def _check(ctx: Context, workload: BaseModel, outcome: ImplOutcome) -> None:
    slug = ctx.operation.metadata.name
    try:
        outcome.check = check(
            ctx.operation, workload, outcome.adapter.bind, REFERENCES[slug], in_place=outcome.adapter.in_place,
            device=ctx.device.torch_device, trials=ctx.check_trials, poison=ctx.device.poison,
        )
    except Exception as exc:  # noqa: BLE001 - a crashing implementation is a result, not a crash
        outcome.status, outcome.error = "runtime_error", _error(exc)
        return
    if not outcome.check.passed:
        outcome.status = "incorrect_numerical"


def _time(ctx: Context, workload: BaseModel, outcomes: list[ImplOutcome]) -> None:
    slug = ctx.operation.metadata.name
    calls: dict[str, Callable[[], object]] = {}
    samplers: dict[str, Sampler] = {}
    for o in outcomes:
        try:
            calls[o.adapter.key] = o.adapter.bind(make_inputs(slug, workload, TIMING_SEED, ctx.device.torch_device))
            samplers[o.adapter.key] = ctx.device.sampler(calls[o.adapter.key])
        except Exception as exc:  # noqa: BLE001
            o.status, o.error = "runtime_error", f"timing setup failed: {_error(exc)}"
            calls.pop(o.adapter.key, None)
    timed = [o for o in outcomes if o.adapter.key in samplers]
    try:
        results = measure_interleaved(calls, samplers, ctx.device, ctx.policy)
    except Exception:  # noqa: BLE001 - isolate the implementation that fails
        results = {}
        for o in timed:
            key = o.adapter.key
            try:
                results.update(measure_interleaved({key: calls[key]}, {key: samplers[key]}, ctx.device, ctx.policy))
            except Exception as exc:  # noqa: BLE001
                o.status, o.error = "runtime_error", f"timing failed: {_error(exc)}"
    for o in timed:
        o.measurement = results.get(o.adapter.key)
        if o.measurement is not None and ctx.do_bench is not None:
            try:
                o.do_bench_ns = ctx.do_bench(calls[o.adapter.key])
            except Exception as exc:  # noqa: BLE001 - the secondary figure is optional
                ctx.emit("warning", message=f"{o.adapter.title}: do_bench failed ({_error(exc)})")
    del calls, samplers
    ctx.device.release()


def _samples_blob(o: ImplOutcome, workload: BaseModel, observed_at: str) -> bytes:
    m = o.measurement
    assert m is not None
    data = {
        "format": "kernelindex-samples/v1",
        "implementation": o.adapter.line,
        "version": o.implementation.spec.version,
        "workload": workload.model_dump(mode="json")["spec"]["axes"],
        "observed_at": observed_at,
        "unit": "ns",
        "method": m.method,
        "stop_reason": m.stop_reason,
        "warmup_calls": m.warmup_calls,
        "device_ns": [round(v) for v in m.samples],
        "host_ns": [round(v) for v in m.host_samples],
        "do_bench_median_ns": None if o.do_bench_ns is None else round(o.do_bench_ns),
    }
    return canonical_bytes(data)


def _timing_json(o: ImplOutcome, blob: bytes) -> dict[str, Any]:
    m = o.measurement
    assert m is not None
    s = m.summary()
    timing: dict[str, Any] = {**s.as_ns(), "samples": s.samples, "samples_digest": bytes_digest(blob),
                              "method": m.method, "raw": {"stop_reason": m.stop_reason,
                                                          "relative_standard_error": f"{s.rse:.5f}"}}
    if m.host_samples:
        timing["host_ns"] = round(sorted(m.host_samples)[len(m.host_samples) // 2])
    if o.do_bench_ns is not None:
        timing["secondary"] = {"do_bench_median_ns": round(o.do_bench_ns)}
    return timing


def _finish(ctx: Context, workload: BaseModel, case: CaseOutcome, o: ImplOutcome) -> None:
    observed = datetime.now(UTC).replace(microsecond=0)
    stamp = observed.isoformat().replace("+00:00", "Z")
    timing: dict[str, Any] = {}
    artifacts: dict[str, str] = {}
    if o.measurement is not None and o.status == "passed":
        o.samples_blob = _samples_blob(o, workload, stamp)
        timing = _timing_json(o, o.samples_blob)
        artifacts["samples"] = timing["samples_digest"]
        if case.floor_ns is not None and timing["median_ns"] < case.floor_ns:
            o.status = "suspected_reward_hack"
    correctness = records.correctness_json(o.check, o.error)
    if o.error and o.check is not None:
        correctness["detail"] = f"{correctness.get('detail', '')}; {o.error}".strip("; ")
    case_id = case_label(workload).replace(" ", ",")
    external_id = f"{ctx.campaign}/{ctx.operation.metadata.name}/{case_id}/{o.adapter.key}"
    o.run = records.run_manifest(
        implementation=o.implementation, workload=workload, protocol=ctx.protocol, environment=ctx.environment,
        status=o.status, timing=timing, correctness=correctness, observed_at=observed, external_id=external_id,
        runner=ctx.runner, artifacts=artifacts,
        title=f"{o.adapter.title} · {ctx.operation.metadata.name} · {case_label(workload)}",
    )


def verify_case(ctx: Context, workload: BaseModel, adapters: list[tuple[Adapter, BaseModel]]) -> CaseOutcome:
    case = CaseOutcome(workload, floor_ns(ctx.operation, workload, ctx.device.name))
    case.impls = [ImplOutcome(adapter=a, implementation=impl) for a, impl in adapters]
    for o in case.impls:
        o.adapter.start_case()
        ctx.emit("step", label=f"check {o.adapter.key}")
        _check(ctx, workload, o)
    passing = [o for o in case.impls if o.status == "passed"]
    if passing:
        ctx.emit("step", label="timing " + ", ".join(o.adapter.key for o in passing))
        _time(ctx, workload, passing)
    for o in case.impls:
        _finish(ctx, workload, case, o)
    return case
