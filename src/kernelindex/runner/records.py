"""Manifests the runner produces: projects, implementation revisions, its protocol, runs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kernelindex import registry, urls
from kernelindex.domain.manifests import (
    BenchmarkProtocol,
    BenchmarkRun,
    ExecutionEnvironment,
    ImplementationRevision,
    OperationSpec,
    Source,
    WorkloadCase,
    build,
    digest_of,
)
from kernelindex.domain.sources import RUNNER_PROTOCOL_VERSION, RUNNER_SOURCE
from kernelindex.runner.correctness import CheckResult
from kernelindex.runner.timing import TimingPolicy

HARNESS = "kernelindex-runner"
HARNESS_VERSION = "3"


def _public_version(version: str) -> str:
    return version.split("+", 1)[0]


def implementation_manifest(adapter: Any, operation: OperationSpec) -> ImplementationRevision:
    """ImplementationRevision for an adapter, pinned to the versions installed here."""
    project = registry.project_manifest(adapter.project)
    versions = adapter.versions()
    primary = adapter.packages[0]
    spec: dict[str, Any] = {
        "project": digest_of(project),
        "operation": digest_of(operation),
        "version": versions[primary],
        "callable": {"language": adapter.language, "module": adapter.module, "symbol": adapter.symbol},
        "role": adapter.role,
        "in_place": adapter.in_place,
        "install": {"method": "pip", "packages": [{"name": d, "version": v} for d, v in versions.items()]},
        "license": registry.project_licenses().get(adapter.project, {}),
    }
    if adapter.forward_computes_gradient:  # absent otherwise: other implementations keep their identity
        spec["forward_computes_gradient"] = True
    if project.spec.repository:
        spec["source_url"] = f"{project.spec.repository}/tree/v{_public_version(versions[primary])}"
    metadata = {"name": adapter.line, "title": adapter.title}
    if adapter.description:
        metadata["description"] = adapter.description
    return build("ImplementationRevision", spec, metadata)


REGION_WORDS = {
    "forward": "the forward call (with autograd recording when the operation has gradients, as the sources time it)",
    "backward": (
        "autograd's gradients of the operation's gradient inputs from a forward output computed before timing, for "
        "a fixed random upstream gradient (torch.autograd.grad with retain_graph; the forward is not timed)"
    ),
    "forward+backward": "the forward call and autograd's gradients of its gradient inputs, in one timed call",
}
# The one rule for the upstream gradient (correctness.upstream_gradients draws it). The loss wording
# makes a new protocol for the gradient regions of loss operations: the v3 runs shipped before it
# used a random scalar, a different call (Liger's losses skip their scaling for 1.0), never mixed.
UPSTREAM_LOSS = (
    "upstream gradient 1.0: the operation's output is one number (a loss), and 1.0 is what loss.backward() "
    "sends in training; the correctness reference's float64 autograd uses the same 1.0"
)


def scalar_output(operation: OperationSpec) -> bool:
    """Every output of the operation is one number (a loss): its backward starts from 1.0."""
    return bool(operation.spec.outputs) and all(out.shape == [] for out in operation.spec.outputs)


def loss_upstream(operation: OperationSpec, region: str) -> bool:
    """A gradient region of a loss: its backward starts from 1.0 (else from a fixed random gradient)."""
    return region in ("backward", "forward+backward") and scalar_output(operation)


def region_words(operation: OperationSpec, region: str) -> str:
    if not loss_upstream(operation, region):
        return REGION_WORDS[region]  # word for word as v3 shipped it: those protocols keep their identity
    words = REGION_WORDS[region].replace("a fixed random upstream gradient", "upstream gradient 1.0")
    return words if region == "backward" else f"{words}, from upstream gradient 1.0"


def _input_regeneration(operation: OperationSpec, region: str, stream: bool = False) -> str:
    words = ("fresh random inputs for each of 3 correctness checks; timing uses one further fresh input set "
             "per implementation and region (in-place implementations keep transforming it)")
    if stream:
        words = ("fresh random inputs for each of 3 correctness checks; timing uses R further fresh input sets per "
                 "implementation and region, one per rotating set, each drawn from its own seed (in-place "
                 "implementations keep transforming theirs)")
    # Only a loss's gradient regions say it in the spec: a new protocol (and cohort) for them alone.
    return f"{words}; {UPSTREAM_LOSS}" if loss_upstream(operation, region) else words


V3_L2_POLICY = ("flushed before every timed call by reading a 256 MiB buffer (a reduction into 8 KiB), launched "
                "outside the call, so never in its device time")


def v3_timer(calls_per_sample: int) -> str:
    """Protocol v3's timer, in the words every v3 protocol carries (the curated operations' and the problem
    modules')."""
    return (
        "CUPTI device time (PyTorch profiler's CUDA activity): per call, the union of the durations of the "
        "kernels, memcpys and memsets the call launched (overlap on several streams counted once); the "
        "median over calls ranks. Recorded beside it, never ranked: the span (first start to last end), a "
        f"CUDA graph replay cross-check ({calls_per_sample} × [flush, call] minus {calls_per_sample} × [flush], "
        "per call; per-call CUDA events where capture fails), the host syncs per call from the trace, and "
        "the wall and host CPU time per call of back-to-back calls"
    )


STREAM_VERSION = RUNNER_PROTOCOL_VERSION  # protocol v4: stream time ranks (curated operations and problem modules)
V4_L2_POLICY = (
    "no flush: each call has its own input/output set, R sets used in turn, together at least 4 x the GPU's L2 "
    "(R = 1 where one call's tensors exceed that), so every call starts cold and pays its own write-back inside "
    "the replay")


def v4_timer() -> str:
    """Protocol v4's timer, in the words every v4 protocol carries."""
    return (
        "stream time: K calls back to back over R rotating input/output sets (K a multiple of R, at least 32), "
        "captured in one CUDA graph; each replay timed whole by two CUDA events, per call = replay / K; the "
        "median over replays ranks. A call that cannot be captured (it synchronises with the host) runs the "
        "same K calls eagerly between the same events, its host stalls included, and says so. Recorded beside "
        "it, never ranked: kernel busy time (protocol v3's CUPTI union of the call's kernels, copies and sets "
        f"after an L2 flush), the v3 graph-replay cross-check ({CROSS_CHECK_CALLS} x [flush, call] minus "
        f"{CROSS_CHECK_CALLS} x [flush], per call), the host syncs per call, and the wall and host CPU time per "
        "call of back-to-back calls"
    )


CROSS_CHECK_CALLS = 10


def protocol_manifest(operation: OperationSpec, policy: TimingPolicy, calls_per_sample: int,
                      region: str = "forward", stream: bool = False) -> BenchmarkProtocol:
    """The protocol of a campaign's runs: v4 (stream time) where the device times it (``stream``), else v3."""
    version = STREAM_VERSION if stream else HARNESS_VERSION
    spec = {
        "harness": {"name": HARNESS, "version": version},
        "timer": v4_timer() if stream else v3_timer(calls_per_sample),
        "timed_region": region,
        "setup_excluded": True,
        "warmup": {"count": policy.warmup_calls, "time_ns": policy.warmup_time_ns},
        "repetitions": {"count": policy.min_samples, "time_ns": policy.time_budget_ns},
        "l2_policy": V4_L2_POLICY if stream else V3_L2_POLICY,
        "input_regeneration": _input_regeneration(operation, region, stream),
        "statistic": "median",
        "quantiles": [0.2, 0.5, 0.8],
        "correctness": {
            "policy": "asserted",
            "comparator": (
                "relative Frobenius error ||out - ref|| / ||ref|| against a float64 PyTorch reference on the same "
                "inputs, for every output and, for backward regions, every gradient (float64 autograd of the "
                "reference, same upstream gradient; the gradient tolerance is the operation's but at least 0.02 "
                "bf16, 0.005 fp16, 1e-5 fp32, as a gradient's sum order is the implementation's); NaN/Inf fail; "
                "a tensor with norm under 1e-3 of the reference fails; outputs poisoned (0xFF) before the call; "
                "input mutation checked against the in-place declaration"
            ),
            "tolerances": dict(operation.spec.tolerance),
        },
        "native": False,
    }
    # v3 named its protocols after the operation that first used them, though operations share one protocol
    # (same digest); v4's name is the protocol's alone
    named = f"-{region.replace('+', '-')}" if stream else f"-{operation.metadata.name}-{region.replace('+', '-')}"
    if stream and loss_upstream(operation, region):
        named += "-upstream-1"
    upstream_sentence = f" The {UPSTREAM_LOSS}." if loss_upstream(operation, region) else ""
    samples = "replays" if stream else "samples"
    return build("BenchmarkProtocol", spec, {
        "name": f"{HARNESS}-v{version}{named}",
        "title": f"KernelIndex runner v{version} · {region}",
        "description": (
            f"Timed: {region_words(operation, region)}.{upstream_sentence} Warm-up: {policy.warmup_calls} calls and "
            f"{policy.warmup_time_ns / 1e6:.0f} ms; at least {policy.min_samples} {samples}, then stop at relative "
            f"standard error {policy.target_rse:.1%}, {policy.max_samples} samples or "
            f"{policy.time_budget_ns / 1e9:g} s per case and region (a run stopped by the hard limit, "
            f"{(policy.hard_limit_ns or 3 * policy.time_budget_ns) / 1e9:g} s, before {policy.min_samples} samples "
            "is marked under-sampled); implementations interleaved round by round. "
            "torch.compile is compiled from a clean dynamo state for every case and region. Host time per call, "
            "compile time and the call's peak memory are recorded separately, never in the figure. A call whose "
            f"wall time per call exceeds its {'stream' if stream else 'device'} time by more than 20% is recorded as "
            "host-bound."
        ),
    })


def source_manifest() -> Source:
    return build("Source", {
        "name": RUNNER_SOURCE,
        "url": urls.docs("runner"),
        "license": "Apache-2.0",
        "attribution": "Measured by a KernelIndex verification runner; each run comes in a bundle signed by its key.",
    }, {"name": RUNNER_SOURCE, "title": "KernelIndex verification runner"})


def correctness_json(result: CheckResult | None, detail: str | None = None, region: str = "forward") -> dict[str, Any]:
    """The run's correctness for its region: a backward region needs its gradients to pass too, and
    its relative error is the worst over outputs and gradients."""
    if result is None:
        return {"checked": False, "detail": detail or "not checked"}
    data: dict[str, Any] = {
        "checked": True, "passed": result.passed_for(region), "tolerance": result.tolerance,
        "mutated_inputs": result.mutated_inputs, "detail": result.detail_for(region),
    }
    errors = [result.relative_error]
    if region != "forward":
        errors.append(result.gradient_error)
    known = [e for e in errors if e is not None]
    if known:
        data["relative_error"] = float(f"{max(known):.6g}")
    return data


def run_manifest(
    *, implementation: ImplementationRevision, workload: WorkloadCase, protocol: BenchmarkProtocol,
    environment: ExecutionEnvironment,
    status: str, timing: dict[str, Any], correctness: dict[str, Any], observed_at: datetime,
    external_id: str, runner: dict[str, str], artifacts: dict[str, str], title: str,
) -> BenchmarkRun:
    spec = {
        "implementation": digest_of(implementation), "workload": digest_of(workload),
        "protocol": digest_of(protocol), "environment": digest_of(environment),
        "status": status, "timing": timing, "correctness": correctness,
        "observed_at": observed_at.isoformat().replace("+00:00", "Z"),
        "source": {"name": RUNNER_SOURCE, "external_id": external_id},
        "runner": runner, "artifacts": artifacts,
    }
    return build("BenchmarkRun", spec, {"title": title})
