"""A verified run's timing fields and its samples file, from one implementation's outcome (``verify.ImplOutcome``):
the figure and its statistics, protocol v3's self-checks (``device_timing``), v4's stream facts and kernel busy
time (``stream_setup``), and the secondary figures (do_bench, compile, peak memory)."""

from __future__ import annotations

from typing import Any

from kernelindex.domain.canonical import bytes_digest, canonical_bytes
from kernelindex.domain.manifests import WorkloadCase
from kernelindex.runner.compile_time import compile_figures
from kernelindex.runner.device_timing import v3_fields
from kernelindex.runner.memory import IN_PLACE_NOTE
from kernelindex.runner.memory import METHOD as PEAK_METHOD
from kernelindex.runner.stream_setup import v4_fields


def samples_blob(o: Any, workload: WorkloadCase, observed_at: str) -> bytes:
    m = o.measurement
    assert m is not None
    data = {
        # v1: per-call figures; v2: with the trace's span and syncs (v3 runs); v3: one figure per replay (v4 runs)
        "format": "kernelindex-samples/v3" if o.stream else
                  "kernelindex-samples/v2" if m.activities else "kernelindex-samples/v1",
        "implementation": o.adapter.line,
        "version": o.implementation.spec.version,
        "workload": workload.model_dump(mode="json")["spec"]["axes"],
        "region": o.region,
        "observed_at": observed_at,
        "unit": "ns",
        "method": m.method,
        "stop_reason": m.stop_reason,
        "warmup_calls": m.warmup_calls,
        "stream_ns" if o.stream else "device_ns": [round(v) for v in m.samples],
        **({"span_ns": [a.span_ns for a in m.activities], "syncs": [a.syncs for a in m.activities]}
           if m.activities else {}),
        "host_ns": [round(v) for v in m.host_samples],
        "do_bench_median_ns": None if o.do_bench_ns is None else round(o.do_bench_ns),
        "capture_failure": m.fallback_reason,
        **({"kernel_busy_median_ns": round(o.kernel_busy[0])} if o.kernel_busy else {}),
    }
    return canonical_bytes(data)


def timing_json(o: Any, blob: bytes, min_samples: int) -> dict[str, Any]:
    m = o.measurement
    assert m is not None
    s = m.summary()
    timing: dict[str, Any] = {**s.as_ns(), "samples": s.samples, "samples_digest": bytes_digest(blob),
                              "method": m.method, "raw": {"stop_reason": m.stop_reason,
                                                          "relative_standard_error": f"{s.rse:.5f}"}}
    timing.update(v3_fields(m, min_samples, o.cross_check, o.host_cost))
    timing.update(v4_fields(o.stream, o.kernel_busy))
    if m.host_samples:
        timing["host_ns"] = round(sorted(m.host_samples)[len(m.host_samples) // 2])
    if m.fallback_reason:
        timing["raw"]["capture_failure"] = m.fallback_reason[:300]
    secondary: dict[str, int] = {}
    if o.do_bench_ns is not None:
        secondary["do_bench_median_ns"] = round(o.do_bench_ns)
    secondary.update(compile_figures(o.adapter.key, o.compile, o.checks_compile_ns, o.first_call_ns, timing["raw"]))
    if o.plan is not None:  # host work per batch layout, made when binding: beside the figure, never in it
        secondary["plan_ns"] = o.plan.ns
        timing["raw"]["plan_method"] = o.plan.method
    if secondary:
        timing["secondary"] = secondary
    if o.peak_bytes is not None:
        timing["raw"]["call_peak_memory_bytes"] = str(o.peak_bytes)
        timing["raw"]["call_peak_memory_method"] = PEAK_METHOD
        if o.peak_bytes == 0:
            timing["raw"]["call_peak_memory_note"] = IN_PLACE_NOTE
    for name, count in o.distinct_ids.items():  # the rows a gather reads: the floor counts no more
        timing["raw"][f"distinct_{name}"] = str(count)
    if o.region == "backward":
        timing["raw"]["backward"] = (
            "torch.autograd.grad(retain_graph=True) from one untimed forward; that forward built with "
            "torch._functorch.config.donated_buffer=False")
    return timing
