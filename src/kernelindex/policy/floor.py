"""floor-v1: max(bytes / bandwidth, flops / peak, the GPU's shortest call) — a lower bound, an estimate, not evidence.

bytes = compulsory HBM traffic of the timed region (docs/design.md §5):

- forward: every input read once and every output written once (an in-place output still costs
  its write); a gathered table counts only the rows its ids name (``policy/gathers.py``: a run's recorded
  count, else the expectation for uniformly random ids, else the declared bound);
- backward: the upstream gradient of every floating-point output read, the forward inputs the
  backward needs read, every gradient written (saved intermediates are not compulsory). Where every
  floating-point output is one number (a loss), each gradient is that upstream number times a tensor
  the forward can already have computed (Liger's fused losses do exactly that), so such a backward
  must read no input and do no matmul: only the upstream numbers read and the gradients written;
- forward+backward: every input and every upstream gradient read once, every output and every
  gradient written once;
- forward-no-grad (the forward under torch.no_grad()): as forward — no gradient is compulsory.

Gradients are compulsory only for the inputs a backward produces them for (``GRADIENTS``): a
distillation teacher, a preference or GRPO reference head gets none.

flops only where the operation declares a formula (for the forward). The gradient work of a matmul
y = x·W is 2× its forward FLOPs (dx and dW); only matmuls whose operands get gradients count
(``GRADIENT_FLOPS`` gives that work where a frozen head's matmul is part of the forward formula).
backward = the gradient work (none for a loss, above); forward+backward = forward + gradient work.

Two floors, named (docs/design.md §5):

- the *physical floor* uses the datasheet's peak bandwidth and compute: no correct run beats it;
- the *attainable floor* uses what a KernelIndex runner measured on the GPU (``Attainable``). Where a runner
  measured the GPU's v4 ceiling table (read-only, copy and write-only streams at 1 MiB to 4 GiB, timed as runs
  are), the bandwidth is the one measured for the call's own read/write mix at its own size
  (``policy/mix_ceiling.py``): a run whose implied bandwidth is over it by more than 3% is flagged by the
  ceiling check instead of moving every floor of the GPU. Elsewhere it is the best bandwidth the GPU has been
  seen to sustain — the maximum over a runner's ceiling kernels and over every verified run on it.

Reads and writes share one bus: the memory time is (read + write) ÷ bandwidth, never
max(read ÷ read bandwidth, write ÷ write bandwidth), which would let HBM read and write at once on
separate lanes (on an H200 that implies ~8 TB/s from a 4.8 TB/s part).

The latency term: every call is at least one kernel, and no kernel takes less of a stream than the shortest
call a runner measured on the GPU (``GpuSpec.min_call_ns``: one kernel adding 1 to one float, timed as stream
time, protocol v4). Both floors are max(memory, compute, that time). It is a maximum, not a sum: a kernel's
memory traffic and arithmetic overlap its launch and its drain (the shortest call itself moves 4 bytes inside
its 1.1 µs), so a sum would claim a real short call cannot be as fast as it is. A GPU no runner measured has no
latency term and its floor says so (``LATENCY_UNMEASURED``); no figure is borrowed from another GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kernelindex.domain.dtypes import peak_class
from kernelindex.domain.expressions import evaluate
from kernelindex.domain.gpus import GpuSpec
from kernelindex.domain.units import format_bytes
from kernelindex.policy.floor_names import ATTAINABLE, FLOOR_NAMES, PHYSICAL
from kernelindex.policy.mix_ceiling import CeilingFigure, mix_ceiling
from kernelindex.policy.ratios import ratio
from kernelindex.policy.traffic import TensorTraffic, compulsory_traffic, resolved_axes, scalar_loss

POLICY = "floor-v1"
# The gradient work (FLOPs) where the forward formula also counts a frozen head: dx and dW of the
# trained head only, 2 × its forward 2·rows·hidden·vocab. Elsewhere the gradient work is 2 × forward.
GRADIENT_FLOPS: dict[str, str] = {
    "fused-linear-jsd": "4 * bt * hidden * vocab",  # forward: student and teacher heads, 2·bt·hidden·vocab each
    "distill-cosine-loss": "4 * bt * student_hidden * vocab",  # forward: 2·bt·vocab·(hidden + student_hidden)
    "distill-jsd-loss": "4 * bt * student_hidden * vocab",
    "fused-linear-kto-loss": "4 * batch * seq * hidden * vocab",  # forward: policy and reference heads
    "fused-linear-grpo-loss-token": "4 * batch * seq * hidden * vocab",
    "fused-linear-grpo-loss-sequence": "4 * batch * seq * hidden * vocab",
}


CEILING_PROBE_BYTES = 1 << 30  # the buffer each of the runner's ceiling kernels streams (copy, read, write)


LATENCY_MEASURED = ("Includes the {gpu}'s measured minimum kernel time, {latency} (the stream time of the shortest "
                    "call a KernelIndex runner measured on it): no call takes less.")
LATENCY_UNMEASURED = ("No latency term: no KernelIndex runner has measured the {gpu}'s minimum kernel time, so this "
                      "floor counts the bytes and FLOPs alone.")


def _microseconds(ns: float) -> str:
    return f"{ns / 1e3:.2f} µs"


@dataclass(frozen=True)
class Ceilings:
    """Bandwidths a KernelIndex runner measured on the device, in bytes/s (bytes read + written)."""

    copy: float
    read: float | None = None
    write: float | None = None

    @property
    def best(self) -> float:
        """The highest of them: one bus carries reads and writes, so the fastest stream bounds any mix."""
        return max(v for v in (self.copy, self.read, self.write) if v)


@dataclass(frozen=True)
class Attainable:
    """The best bandwidth a GPU has been seen to sustain, in bytes/s, and what sustained it; and, where a
    runner measured its ceiling GEMM, the best 16-bit GEMM rate seen there (``attainable_compute``)."""

    bandwidth_bytes_per_s: float
    source: str
    compute_flops_per_s: float | None = None
    compute_source: str = ""
    run_id: str = ""  # the verified run that set the bandwidth ("": a ceiling kernel did)
    compute_run_id: str = ""  # the verified GEMM run that set the compute rate ("": the ceiling GEMM did)
    # Runner v4's ceiling table of the GPU (issue 42 item 3): where there is one, the attainable floor divides a
    # call's bytes by the bandwidth measured for its own read/write mix at its own size, not by the best rate seen.
    table: tuple[CeilingFigure, ...] = ()


SIXTEEN_BIT = {"fp16", "bf16"}


def attainable_compute(operation_spec: dict, workload_spec: dict, attainable: Attainable | None,
                       peak: float | None) -> tuple[float, str] | None:
    """The rate the attainable compute floor divides by, and its words: the best fp16/bf16 GEMM rate seen
    on the GPU (the runner's ceiling GEMM or a faster verified GEMM run), for a GEMM whose inputs are all
    16-bit floats; never above the datasheet peak. None for anything else (the datasheet rate stands)."""
    if attainable is None or not attainable.compute_flops_per_s or operation_spec.get("family") != "gemm":
        return None
    bound = workload_spec.get("dtypes", {})
    dtypes = {bound.get(t.get("dtype"), t.get("dtype")) for t in operation_spec.get("inputs", [])}
    if not dtypes or not dtypes <= SIXTEEN_BIT:
        return None
    rate = min(attainable.compute_flops_per_s, peak) if peak else attainable.compute_flops_per_s
    return rate, f"{rate / 1e12:,.0f} TFLOP/s, {attainable.compute_source}"


@dataclass(frozen=True)
class FloorEstimate:
    gpu: str
    gpu_name: str
    tensors: tuple[TensorTraffic, ...]
    bytes_total: int
    bandwidth_bytes_per_s: float
    bandwidth_source: str
    memory_ns: float
    flops: int | None
    peak_flops_per_s: float | None
    compute_ns: float | None
    measured: bool  # the attainable floor: bandwidth seen sustained on the GPU, not the datasheet's
    region: str = "forward"
    compute_source: str = ""  # the attainable floor's compute rate in words (attainable_compute), else ""
    bandwidth_run_id: str = ""  # the verified run whose rate the attainable floor's bandwidth is ("": a ceiling's)
    compute_run_id: str = ""  # the verified GEMM run whose rate its compute time divides by ("": none)
    latency_ns: float | None = None  # the GPU's measured shortest call (None: no runner measured one)
    gpu_short: str = ""  # the GPU's short name ("H100"), for the latency term's words

    @property
    def kind(self) -> str:
        return ATTAINABLE if self.measured else PHYSICAL

    @property
    def name(self) -> str:
        return FLOOR_NAMES[self.kind]

    @property
    def work_ns(self) -> float:
        """The time of the compulsory bytes and FLOPs alone (the floor without its latency term)."""
        return max(self.memory_ns, self.compute_ns or 0.0)

    @property
    def floor_ns(self) -> float:
        return max(self.work_ns, self.latency_ns or 0.0)

    @property
    def work_bound(self) -> str:
        """What bounds the work alone: "compute" or "bandwidth" (the unit a run's achieved rate is given in)."""
        return "compute" if (self.compute_ns or 0.0) > self.memory_ns else "bandwidth"

    @property
    def bound(self) -> str:
        """What sets the floor: "latency" where the GPU's shortest call outlasts the work, else the work's bound."""
        return "latency" if (self.latency_ns or 0.0) > self.work_ns else self.work_bound

    @property
    def latency_words(self) -> str:
        """The latency term in words, for every surface that explains the floor."""
        if self.latency_ns is None:
            return LATENCY_UNMEASURED.format(gpu=self.gpu_short or self.gpu_name)
        return LATENCY_MEASURED.format(gpu=self.gpu_short or self.gpu_name, latency=_microseconds(self.latency_ns))

    def ratio(self, median_ns: float | None) -> float | None:
        return ratio(median_ns, self.floor_ns)

    def peak_share(self, median_ns: float | None) -> float | None:
        """The achieved rate's share of the rate this floor assumes for its work's bound (the datasheet's dense
        TFLOP/s or HBM bandwidth for the physical floor): the work's time over the run's, latency left out."""
        return self.work_ns / median_ns if median_ns and median_ns > 0 and self.work_ns > 0 else None

    def throughput(self, median_ns: float | None) -> tuple[float, str] | None:
        """Achieved rate in the work's unit: floor bytes ÷ time (GB/s) when bandwidth-bound,
        counted FLOPs ÷ time (TFLOP/s) when compute-bound."""
        if not median_ns or median_ns <= 0:
            return None
        seconds = median_ns * 1e-9
        if self.work_bound == "compute" and self.flops:
            return self.flops / seconds / 1e12, "TFLOP/s"
        return self.bytes_total / seconds / 1e9, "GB/s"

    def to_json(self) -> dict[str, object]:
        return {
            "policy": POLICY,
            "estimate": True,
            "gpu": self.gpu,
            "gpu_name": self.gpu_name,
            "floor_ns": self.floor_ns,
            "bound": self.bound,
            "bytes_total": self.bytes_total,
            "tensors": [t.__dict__ for t in self.tensors],
            "bandwidth_bytes_per_s": self.bandwidth_bytes_per_s,
            "bandwidth_source": self.bandwidth_source,
            "memory_ns": self.memory_ns,
            "flops": self.flops,
            "peak_flops_per_s": self.peak_flops_per_s,
            "compute_ns": self.compute_ns,
            "measured": self.measured,
            "kind": self.kind,
            "name": self.name,
            "region": self.region,
            "compute_source": self.compute_source or None,
            "bandwidth_run_id": self.bandwidth_run_id or None,
            "compute_run_id": self.compute_run_id or None,
            "work_ns": self.work_ns,
            "work_bound": self.work_bound,
            "latency_ns": self.latency_ns,
            "latency": self.latency_words,
        }


def _flops(operation_spec: dict, workload_spec: dict, region: str, operation: str = "") -> int | None:
    formula = operation_spec.get("flops")
    if not formula:
        return None
    axes = resolved_axes(operation_spec, workload_spec)
    forward = evaluate(formula, axes)
    if region in ("forward", "forward-no-grad"):
        return forward
    gradient = evaluate(GRADIENT_FLOPS[operation], axes) if operation in GRADIENT_FLOPS else 2 * forward
    if region == "backward":
        return 0 if scalar_loss(operation_spec, workload_spec) else gradient
    return forward + gradient


def _peak(gpu: GpuSpec, workload_spec: dict, operation_spec: dict | None = None) -> float | None:
    dtypes = list(workload_spec.get("dtypes", {}).values())
    if not dtypes and operation_spec is not None:  # concrete dtypes only: the inputs' own, where they say it
        inputs = {d["name"] for d in operation_spec.get("inputs", [])}
        concrete = [t["dtype"] for t in workload_spec.get("tensors", []) if t.get("name") in inputs]
        # Byte storage (int8 holding packed fp4 or fp8, its scales) says nothing of the rate the math runs at; wider
        # integers are indices (offsets, ids), which no math runs on.
        if concrete and not any(d in ("int8", "uint8") for d in concrete):
            rates = [rate for d in concrete if not d.startswith(("int", "uint"))
                     and (rate := gpu.peaks_tflops.get(peak_class(d)))]
            if rates:  # the slowest of the inputs' rates would not bound a faster kernel from below: the fastest
                return max(rates) * 1e12
    if not dtypes and gpu.peaks_tflops:
        # Inputs whose dtypes have no listed rate (packed fp4 in int8 bytes, fp8 with scales ...): the math's rate is
        # not declared, so the GPU's fastest dense rate — the floor stays a lower bound whatever the kernel runs.
        return max(gpu.peaks_tflops.values()) * 1e12
    peaks = [gpu.peaks_tflops.get(peak_class(d)) for d in dtypes]
    known = [p for p in peaks if p]
    return max(known) * 1e12 if known else None


def floor_estimate(
    operation_spec: dict,
    workload_spec: dict,
    gpu: GpuSpec,
    measured_bandwidth_bytes_per_s: float | None = None,
    *,
    region: str = "forward",
    operation: str = "",
    measured: Ceilings | None = None,
    attainable: Attainable | None = None,
    distinct_ids: Mapping[str, int] | None = None,
) -> FloorEstimate:
    """The floor of ``region`` (``operation``: the operation's slug, for its gradient tables).
    ``attainable`` (or a runner's ``measured`` ceilings, or a copy bandwidth alone) gives the attainable
    floor; none, the physical floor from the datasheet. Memory time = every byte ÷ one bandwidth.
    ``distinct_ids``: a run's recorded distinct ids (the floor of that run, counting the rows it read)."""
    tensors = compulsory_traffic(operation_spec, workload_spec, region, operation, distinct_ids=distinct_ids)
    total = sum(t.bytes for t in tensors)
    if attainable is None and measured is not None:
        attainable = Attainable(measured.best, f"the best of the ceilings a KernelIndex runner measured on {gpu.short}")
    elif attainable is None and measured_bandwidth_bytes_per_s:
        attainable = Attainable(measured_bandwidth_bytes_per_s,
                                f"the copy bandwidth a KernelIndex runner measured on {gpu.short}")
    mix = _mix_bandwidth(tensors, attainable, gpu)
    if mix is not None:
        bandwidth, source = mix
    elif attainable is not None:
        bandwidth = attainable.bandwidth_bytes_per_s
        source = f"{bandwidth / 1e9:,.0f} GB/s, {attainable.source}"
    else:
        bandwidth = gpu.bandwidth_bytes_per_s
        source = f"{gpu.bandwidth_gbps:,.0f} GB/s, {gpu.source}"
    flops = _flops(operation_spec, workload_spec, region, operation)
    peak = _peak(gpu, workload_spec, operation_spec) if flops else None
    seen = attainable_compute(operation_spec, workload_spec, attainable, peak) if flops else None
    if seen is not None:
        peak = seen[0]
    return FloorEstimate(
        gpu=gpu.slug,
        gpu_name=gpu.name,
        tensors=tuple(tensors),
        bytes_total=total,
        bandwidth_bytes_per_s=bandwidth,
        bandwidth_source=source,
        memory_ns=total / bandwidth * 1e9,
        flops=flops,
        peak_flops_per_s=peak,
        compute_ns=flops / peak * 1e9 if flops and peak else None,
        measured=attainable is not None,
        region=region,
        compute_source=seen[1] if seen else "",
        bandwidth_run_id=attainable.run_id if attainable and mix is None else "",
        compute_run_id=attainable.compute_run_id if attainable and seen else "",
        latency_ns=gpu.min_call_ns,
        gpu_short=gpu.short,
    )


def _mix_bandwidth(tensors: list[TensorTraffic], attainable: Attainable | None,
                   gpu: GpuSpec) -> tuple[float, str] | None:
    """The bandwidth of the call's own read/write mix at its size from the GPU's v4 ceiling table, in words
    (None: no table, or no bytes)."""
    if attainable is None or not attainable.table:
        return None
    read = sum(t.bytes for t in tensors if t.direction == "read")
    write = sum(t.bytes for t in tensors if t.direction == "write")
    rate = mix_ceiling(attainable.table, read, write)
    if rate is None:
        return None
    share = 100 * write / (read + write)
    return rate, (f"{rate / 1e9:,.0f} GB/s, the ceiling a KernelIndex runner measured on {gpu.short} for this "
                  f"call's mix ({share:.0f}% writes) at its size ({format_bytes(read + write)})")
