"""What a problem-module campaign (KernelBench on the runner, issue 24 item 5) publishes: each problem's
result from ``problem_process`` → runner protocol v4 runs (v3 for results timed before v4: their timings carry
no stream facts) of the problem's own operation and workload
(the manifests the KernelBench import made, carried byte for byte), in bundles signed like every
runner bundle (``trust.bundles.write_bundle``), so ``ki publish`` and start-up verify them the same way.

- One implementation revision per adapter key, pinned to the torch the environment recorded, under
  the name the KernelBench import gives the same configuration (``{slug}-eager``,
  ``{slug}-inductor-default``, ...): the same implementation, a measured revision of it.
- One protocol: runner v4's timer and L2 policy (stream time over rotating input sets; the model's parameters
  not rotated, their bytes recorded), or v3's for older results, the forward call as upstream times it, and the
  problem adapter's own correctness (float64 execution of the same module; float32 where it cannot run).
- Every asked implementation gets a run whatever happened: passed, incorrect_numerical,
  runtime_error, compile_error, or ``timeout`` when the problem's process was killed. A passed median
  under the problem's physical floor on its GPU is ``suspected_reward_hack``, as in ``verify``.

Pure Python (no torch): results can be bundled on a machine without a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelindex import registry
from kernelindex.domain.canonical import bytes_digest, canonical_bytes
from kernelindex.domain.manifests import (
    BenchmarkProtocol,
    BenchmarkRun,
    ImplementationRevision,
    Manifest,
    OperationSpec,
    SoftwareProject,
    WorkloadCase,
    build,
    digest_of,
)
from kernelindex.policy.floor import floor_estimate
from kernelindex.runner import records
from kernelindex.runner.device_timing import CrossCheckResult, v3_fields
from kernelindex.runner.stats import summarize
from kernelindex.runner.timing import Measurement
from kernelindex.runner.trace import CallActivity

# adapter key → (the KernelBench import's configuration name, title, the call timed)
IMPLEMENTATIONS: dict[str, tuple[str, str, str]] = {
    "eager": ("eager", "PyTorch eager", "model(*inputs)"),
    "torch-compile": ("inductor-default", "torch.compile (inductor, default)",
                      "torch.compile(model, backend='inductor')"),
    "max-autotune-no-cudagraphs": ("inductor-max-autotune-no-cudagraphs",
                                   "torch.compile (inductor, max-autotune-no-cudagraphs)",
                                   "torch.compile(model, backend='inductor', mode='max-autotune-no-cudagraphs')"),
}
CHECKS = 2  # correctness checks per implementation (problem_process's default)
PROCESS_STATUSES = {"timeout", "runtime_error"}  # a problem's process that gave no per-implementation result


class ProblemResultError(ValueError):
    """A result or case that cannot become runs; the message names the problem and what is wrong."""


@dataclass(frozen=True)
class ProblemCase:
    """A problem as the campaign's case list holds it: its file and the import's manifests."""

    level: int
    number: int
    file: str
    operation: OperationSpec
    workload: WorkloadCase

    @classmethod
    def from_json(cls, case: dict[str, Any]) -> ProblemCase:
        from kernelindex.domain.manifests import parse_manifest

        operation, workload = parse_manifest(case["operation_manifest"]), parse_manifest(case["workload_manifest"])
        if not isinstance(operation, OperationSpec) or not isinstance(workload, WorkloadCase):
            raise ProblemResultError(f"{case['file']}: the case's manifests are not an operation and a workload")
        if digest_of(workload) != case["workload"] or workload.spec.operation != digest_of(operation):
            raise ProblemResultError(f"{case['file']}: the case's workload is not {case['workload']} of its operation")
        return cls(case["level"], case["number"], case["file"], operation, workload)


@dataclass
class ProblemRuns:
    """The manifests and samples files of one bundle, and what became of each problem."""

    manifests: list[Manifest] = field(default_factory=list)
    samples: list[bytes] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)

    def runs(self) -> list[BenchmarkRun]:
        return [m for m in self.manifests if isinstance(m, BenchmarkRun)]


def implementation_manifest(operation: OperationSpec, key: str, torch_version: str,
                            project: SoftwareProject) -> ImplementationRevision:
    configuration, title, call = IMPLEMENTATIONS[key]
    spec = {
        "project": digest_of(project), "operation": digest_of(operation), "version": torch_version,
        "callable": {"language": "python", "module": "KernelBench problem module (the operation's semantics)",
                     "symbol": call},
        "role": "baseline",
        "install": {"method": "pip", "packages": [{"name": "torch", "version": torch_version}]},
        "license": registry.project_licenses().get("pytorch", {}),
    }
    return build("ImplementationRevision", spec, {"name": f"{operation.slug}-{configuration}"[:120], "title": title})


# In the signed spec, not only in the name: a protocol's identity is its spec's digest, so the runs of 2026-12-02,
# which timed the forward with autograd recording under the same spec without these words, would otherwise share
# this protocol's identity (and the note that says they were not timed as KernelBench times them).
NO_GRAD_CALL = "; the timed call runs under torch.no_grad() (autograd off), as KernelBench's timing scripts run it"


# Protocol v4 on a problem module: what stays put from one call to the next (docs/runner.md, "Problem modules").
UNROTATED = ("the model's parameters, buffers and tensor attributes are not rotated: one model, called as a layer "
             "is (a compiled implementation is bound to one module; R twin modules would need R compilations), so "
             "weights that fit the L2 may stay there from call to call; each run records their bytes "
             "(timing.stream.unrotated_bytes)")
REBINDING_CALL = ("; a call that replaces tensors its model keeps between calls is not captured either (a graph would "
                  "go on writing to memory freed during capture): its K calls run eagerly, and it says why")
V3_DRAWS = "timing uses one further draw, shared by the implementations"
V4_DRAWS = ("timing uses R further draws, the rotating sets (the first under the fixed seed, each other under a seed "
            "of its own), drawn once and shared by the implementations")


def protocol_manifest(policy: dict[str, Any], calls_per_sample: int = 10, stream: bool = False) -> BenchmarkProtocol:
    """Runner v3 on a problem module's forward, or v4 (stream time) where ``stream`` (``policy``: the TimingPolicy
    the problems ran under)."""
    version = records.STREAM_VERSION if stream else records.HARNESS_VERSION
    spec = {
        "harness": {"name": records.HARNESS, "version": version},
        "timer": (records.v4_timer() + REBINDING_CALL if stream else records.v3_timer(calls_per_sample)) + NO_GRAD_CALL,
        "timed_region": "forward",
        "setup_excluded": True,
        "warmup": {"count": policy["warmup_calls"], "time_ns": policy["warmup_time_ns"]},
        "repetitions": {"count": policy["min_samples"], "time_ns": policy["time_budget_ns"]},
        "l2_policy": f"{records.V4_L2_POLICY}; {UNROTATED}" if stream else records.V3_L2_POLICY,
        "input_regeneration": (
            f"the model built once from get_init_inputs() under a fixed seed; fresh inputs from get_inputs() for "
            f"each of {CHECKS} correctness checks; {V4_DRAWS if stream else V3_DRAWS}; "
            "the campaign draws them with the GPU as get_inputs()'s default device (same recipe, shapes and dtypes; "
            "the CPU where the recipe cannot run there)"),
        "statistic": "median",
        "quantiles": [0.2, 0.5, 0.8],
        "correctness": {
            "policy": "asserted",
            "comparator": (
                "relative Frobenius error ||out - ref|| / ||ref|| of every output against the same module executed "
                "in float64 (its parameters, buffers and floating inputs cast; on the CPU, or on the GPU where the "
                "campaign asked and it fit: each run's correctness says which); where the module cannot run in "
                "float64, its float32 execution on the CPU, and the run says so; NaN/Inf fail; an output "
                "with norm under 1e-3 of the reference fails. PyTorch's backend defaults are kept (cuDNN TF32 on, "
                "matmul TF32 off) and recorded in the environment; under TF32 the tolerance is 1e-2"),
            "tolerances": {"fp32": 1e-4, "fp32-tf32": 1e-2, "fp32-reference": 1e-3},
        },
        "native": False,
    }
    figure = ("Ranked: the call's stream time, K calls back to back over R rotating input sets in one CUDA graph, "
              f"per call = replay / K; kernel busy time (v3's device time) beside it. {UNROTATED[0].upper()}"
              f"{UNROTATED[1:]}. ") if stream else ""
    return build("BenchmarkProtocol", spec, {
        "name": f"{records.HARNESS}-v{version}-problem-module-forward-no-grad",
        "title": f"KernelIndex runner v{version} · problem module · forward under no_grad",
        "description": (
            "Timed: the problem's forward call, model(*inputs), under torch.no_grad() (autograd off), as "
            f"KernelBench's timing scripts run it; the model stays in its default training mode. {figure}Warm-up: "
            f"{policy['warmup_calls']} calls and {policy['warmup_time_ns'] / 1e6:.0f} ms; at least "
            f"{policy['min_samples']} {'replays' if stream else 'samples'}, then stop at relative standard error "
            f"{policy['target_rse']:.1%}, "
            f"{policy['max_samples']} {'replays' if stream else 'samples'} or {policy['time_budget_ns'] / 1e9:g} s "
            "per problem (a run stopped "
            "by the hard limit before the minimum is marked under-sampled); implementations interleaved round "
            "by round, each problem in its own process with a time limit and no network. torch.compile's first "
            "call (compilation, autotuning) is timed on its own and recorded, never in the figure."),
    })


def _measurement(timing: dict[str, Any]) -> Measurement:
    """The child's timing as a Measurement for ``v3_fields``, which reads each sample's span and syncs
    (an interval of the span's length stands for the trace's intervals; the device time is the sample)."""
    activities = [CallActivity(intervals=[(0, span)], syncs=syncs, device_to_host_copies=copies)
                  for span, syncs, copies in timing["activities"]]
    return Measurement(method=timing["method"], samples=[float(v) for v in timing["device_ns"]],
                       stop_reason=timing["stop_reason"], warmup_calls=timing["warmup_calls"],
                       host_samples=[float(v) for v in timing["host_ns"]],
                       fallback_reason=timing["fallback_reason"], activities=activities)


def samples_blob(impl: ImplementationRevision, workload: WorkloadCase, timing: dict[str, Any],
                 observed_at: str) -> bytes:
    """The run's samples file, in the runner's format (verify._samples_blob's fields)."""
    spans = {"span_ns": [a[0] for a in timing["activities"]], "syncs": [a[1] for a in timing["activities"]]} \
        if timing["activities"] else {}
    busy = (timing.get("v4") or {}).get("kernel_busy")
    stream = "stream" in (timing.get("v4") or {})
    return canonical_bytes({
        "format": "kernelindex-samples/v3" if stream else
                  "kernelindex-samples/v2" if spans else "kernelindex-samples/v1",
        "implementation": impl.metadata.name, "version": impl.spec.version,
        "workload": workload.model_dump(mode="json")["spec"]["axes"], "region": "forward",
        "observed_at": observed_at, "unit": "ns", "method": timing["method"], "stop_reason": timing["stop_reason"],
        "warmup_calls": timing["warmup_calls"], "stream_ns" if stream else "device_ns": timing["device_ns"], **spans,
        "host_ns": timing["host_ns"], "do_bench_median_ns": None, "capture_failure": timing["fallback_reason"],
        **({"kernel_busy_median_ns": busy["median_ns"]} if busy else {})})


def timing_json(key: str, entry: dict[str, Any], blob: bytes, min_samples: int) -> dict[str, Any]:
    t = entry["timing"]
    m = _measurement(t)
    s = summarize(m.samples)
    cross = CrossCheckResult(*t["cross_check"]) if t.get("cross_check") else None
    host = tuple(t["host_cost"]) if t.get("host_cost") else None
    timing: dict[str, Any] = {**s.as_ns(), "samples": s.samples, "samples_digest": bytes_digest(blob),
                              "method": m.method, "raw": {"stop_reason": m.stop_reason,
                                                          "relative_standard_error": f"{s.rse:.5f}"}}
    timing.update(v3_fields(m, min_samples, cross, host))
    timing.update(t.get("v4") or {})  # stream_setup.v4_fields, as the child wrote them
    if m.host_samples:
        timing["host_ns"] = round(sorted(m.host_samples)[len(m.host_samples) // 2])
    if m.fallback_reason:
        timing["raw"]["capture_failure"] = m.fallback_reason[:300]
    if entry.get("compile_ns") is not None and key != "eager":
        timing["secondary"] = {"compile_ns": round(entry["compile_ns"])}  # never part of the figure
    if t.get("peak_bytes") is not None:
        timing["raw"]["call_peak_memory_bytes"] = str(t["peak_bytes"])
    if entry.get("extras_error"):
        timing["raw"]["extras_error"] = entry["extras_error"][:300]
    return timing


def correctness_json(verdict: dict[str, Any] | None, detail: str = "") -> dict[str, Any]:
    if verdict is None or verdict["checks"] == 0 and verdict["status"] != "passed":
        return {"checked": False, "detail": (detail or (verdict or {}).get("detail") or "not checked")[:500]}
    data: dict[str, Any] = {"checked": True, "passed": verdict["status"] == "passed",
                            "detail": "; ".join(p for p in (f"reference: {verdict['reference']}", verdict["detail"])
                                                if p)[:500]}
    if verdict["relative_error"] is not None and verdict["relative_error"] != float("inf"):
        data["relative_error"] = float(f"{verdict['relative_error']:.6g}")
    if verdict["tolerance"] is not None:
        data["tolerance"] = verdict["tolerance"]
    return data


def floor_ns(case: ProblemCase, product: str) -> float | None:
    """The problem's physical floor on the environment's GPU (None: unknown GPU or tensors not counted)."""
    gpu = registry.gpu_for_product(product)
    op = registry.floor_spec(case.operation, case.operation.model_dump(mode="json")["spec"])
    if gpu is None or not op.get("outputs"):
        return None
    workload = case.workload.model_dump(mode="json")["spec"]
    return floor_estimate(op, workload, gpu, operation=case.operation.slug).floor_ns
