"""floor-v1: max(bytes / bandwidth, flops / peak) — a lower bound, an estimate, not evidence.

bytes = compulsory HBM traffic: every input read once and every output written once (an
in-place output still costs its write); a gather-like input counts only the rows that can be
touched. flops only where the operation declares a formula.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from kernelindex.domain.dtypes import dtype_size
from kernelindex.domain.expressions import evaluate
from kernelindex.registry import GpuSpec

POLICY = "floor-v1"


@dataclass(frozen=True)
class TensorTraffic:
    name: str
    direction: str  # "read" | "write"
    bytes: int
    note: str | None = None


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
    measured: bool  # bandwidth measured by a KernelIndex runner instead of the datasheet

    @property
    def floor_ns(self) -> float:
        return max(self.memory_ns, self.compute_ns or 0.0)

    @property
    def bound(self) -> str:
        return "compute" if (self.compute_ns or 0.0) > self.memory_ns else "bandwidth"

    def ratio(self, median_ns: float | None) -> float | None:
        return None if median_ns is None or self.floor_ns <= 0 else median_ns / self.floor_ns

    def throughput(self, median_ns: float | None) -> tuple[float, str] | None:
        """Achieved rate in the bound's unit: floor bytes ÷ time (GB/s) when bandwidth-bound,
        counted FLOPs ÷ time (TFLOP/s) when compute-bound."""
        if not median_ns or median_ns <= 0:
            return None
        seconds = median_ns * 1e-9
        if self.bound == "compute" and self.flops:
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
        }


def resolved_axes(operation_spec: dict, workload_spec: dict) -> dict[str, int]:
    """Workload axes plus derived axes evaluated from their expressions."""
    axes = dict(workload_spec["axes"])
    for name, axis in operation_spec["axes"].items():
        if axis["role"] == "derived" and name not in axes:
            axes[name] = evaluate(axis["expression"], axes)
    return axes


def compulsory_traffic(operation_spec: dict, workload_spec: dict) -> list[TensorTraffic]:
    axes = resolved_axes(operation_spec, workload_spec)
    concrete = {t["name"]: t for t in workload_spec["tensors"]}
    traffic: list[TensorTraffic] = []
    for direction, decls in (("read", operation_spec["inputs"]), ("write", operation_spec["outputs"])):
        for decl in decls:
            tensor = concrete[decl["name"]]
            size = dtype_size(tensor["dtype"])
            elements = prod(tensor["shape"])
            note = None
            gather = decl.get("gather_rows")
            if gather and direction == "read" and tensor["shape"]:
                rows = min(tensor["shape"][0], evaluate(gather, axes))
                elements = rows * prod(tensor["shape"][1:])
                note = f"gather: at most {gather} = {rows:,} of {tensor['shape'][0]:,} rows"
            traffic.append(TensorTraffic(decl["name"], direction, elements * size, note))
    return traffic


def _flops(operation_spec: dict, workload_spec: dict) -> int | None:
    formula = operation_spec.get("flops")
    return evaluate(formula, resolved_axes(operation_spec, workload_spec)) if formula else None


def _peak(gpu: GpuSpec, workload_spec: dict) -> float | None:
    dtypes = list(workload_spec.get("dtypes", {}).values())
    peaks = [gpu.peaks_tflops.get(d) for d in dtypes]
    known = [p for p in peaks if p]
    return max(known) * 1e12 if known else None


def floor_estimate(
    operation_spec: dict,
    workload_spec: dict,
    gpu: GpuSpec,
    measured_bandwidth_bytes_per_s: float | None = None,
) -> FloorEstimate:
    tensors = compulsory_traffic(operation_spec, workload_spec)
    total = sum(t.bytes for t in tensors)
    if measured_bandwidth_bytes_per_s:
        bandwidth = measured_bandwidth_bytes_per_s
        source = f"device-to-device copy bandwidth measured by a KernelIndex runner on {gpu.short}"
    else:
        bandwidth = gpu.bandwidth_bytes_per_s
        source = f"{gpu.bandwidth_gbps:,.0f} GB/s, {gpu.source}"
    flops = _flops(operation_spec, workload_spec)
    peak = _peak(gpu, workload_spec) if flops else None
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
        measured=measured_bandwidth_bytes_per_s is not None,
    )
