"""The compulsory memory traffic of one call of an operation, per timed region (floor-v1, ``policy/floor.py``): which
tensors a forward, a backward or both must read and write at least once, and how many bytes each is — a gathered
table counting the rows it can read (``policy/gathers``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from math import prod

from kernelindex.domain.dtypes import dtype_size
from kernelindex.domain.expressions import evaluate
from kernelindex.policy.gathers import GATHERS, gathered_rows

REGIONS = ("forward", "backward", "forward+backward", "forward-no-grad")
FLOATING = {"fp64", "fp32", "tf32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2"}

# What a backward must read besides the upstream gradients, where that is less than every input.
BACKWARD_READS: dict[str, tuple[str, ...]] = {
    "rope": ("cos", "sin"),  # linear in q and k: the gradient is the upstream gradient rotated back
    "llama4-rope": ("freqs_cis",),
    "qwen2vl-mrope": ("cos", "sin"),
    "embedding": ("input_ids",),  # the table's gradient scatters the upstream gradient; the table is not read
    "layer-norm": ("x", "weight"),  # the bias does not enter any gradient
    "group-norm": ("x", "weight"),
    # s = x + residual may be saved by the forward: one tensor of x's size is the least read.
    "fused-add-rms-norm": ("x", "weight"),
    "poly-norm": ("x", "weight"),  # the bias's gradient is the upstream gradient's sum
}
# The gradients a backward must write, where that is less than every floating-point, non-constant input.
GRADIENTS: dict[str, tuple[str, ...]] = {
    "fused-add-rms-norm": ("x", "weight"),  # the residual's gradient equals x's and may share its buffer
    # Divergences: the benchmarks (and the runner) differentiate the first distribution only; the
    # target's gradient is not produced, so it is not compulsory.
    "kl-div": ("input",),
    "jsd": ("input",),
    "tvd": ("p",),
    # Distillation: the teacher head is frozen; only the student's activations and head are trained.
    "fused-linear-jsd": ("student_x", "student_weight"),
    "distill-cosine-loss": ("student_x", "student_weight"),
    "distill-jsd-loss": ("student_x", "student_weight"),
    # Preference / RL losses: the reference head is frozen; masks and advantages are data.
    "fused-linear-kto-loss": ("x", "weight", "bias"),
    "fused-linear-grpo-loss-token": ("x", "weight"),
    "fused-linear-grpo-loss-sequence": ("x", "weight"),
}


@dataclass(frozen=True)
class TensorTraffic:
    name: str
    direction: str  # "read" | "write"
    bytes: int
    note: str | None = None


def resolved_axes(operation_spec: dict, workload_spec: dict) -> dict[str, int]:
    """Workload axes plus derived axes evaluated from their expressions."""
    axes = dict(workload_spec["axes"])
    for name, axis in operation_spec["axes"].items():
        if axis["role"] == "derived" and name not in axes:
            axes[name] = evaluate(axis["expression"], axes)
    return axes


def _tensor_bytes(decl: dict, tensor: dict, axes: dict[str, int], direction: str, operation: str = "",
                  concrete: dict[str, dict] | None = None,
                  distinct_ids: Mapping[str, int] | None = None) -> tuple[int, str | None]:
    size = dtype_size(tensor["dtype"])
    elements = prod(tensor["shape"])
    gather = decl.get("gather_rows")
    if gather and direction == "read" and tensor["shape"]:
        table = tensor["shape"][0]
        bound = min(table, evaluate(gather, axes))
        spec = GATHERS.get(operation)
        ids_tensor = (concrete or {}).get(spec.ids) if spec else None
        ids = prod(ids_tensor["shape"]) if ids_tensor else int(bound)
        group = int(axes[spec.group_axis]) if spec and spec.group_axis else 1
        rows = gathered_rows(operation, tensor["name"], table, bound, gather, ids, distinct_ids, group)
        return int(rows.rows * prod(tensor["shape"][1:]) * size), rows.note
    return int(elements * size), None


def gradient_inputs(operation_spec: dict, workload_spec: dict, operation: str = "") -> list[str]:
    """Inputs whose gradient a backward writes: the floating-point inputs that are not constants,
    unless the operation's table says fewer."""
    if operation in GRADIENTS:
        return list(GRADIENTS[operation])
    dtypes = {t["name"]: t["dtype"] for t in workload_spec["tensors"]}
    return [d["name"] for d in operation_spec["inputs"]
            if dtypes[d["name"]] in FLOATING and d.get("role") != "constant"]


def scalar_loss(operation_spec: dict, workload_spec: dict) -> bool:
    """Every floating-point output is one number: its upstream gradient is a scalar, so each input's
    gradient is that scalar times a tensor the forward may have computed already."""
    concrete = {t["name"]: t for t in workload_spec["tensors"]}
    floating = [concrete[d["name"]] for d in operation_spec["outputs"] if concrete[d["name"]]["dtype"] in FLOATING]
    return bool(floating) and all(prod(t["shape"]) == 1 for t in floating)


def _region_plan(operation_spec: dict, workload_spec: dict, region: str, operation: str) -> list[tuple[str, str, str]]:
    """(label, tensor, direction) for each compulsory transfer of the region."""
    if region not in REGIONS:
        raise ValueError(f"unknown timed region {region!r}; one of {', '.join(REGIONS)}")
    inputs = [d["name"] for d in operation_spec["inputs"]]
    dtypes = {t["name"]: t["dtype"] for t in workload_spec["tensors"]}
    outputs = [d["name"] for d in operation_spec["outputs"]]
    upstream = [(f"upstream gradient of {o}", o, "read") for o in outputs if dtypes[o] in FLOATING]
    grads = [(f"gradient of {i}", i, "write") for i in gradient_inputs(operation_spec, workload_spec, operation)]
    if region in ("forward", "forward-no-grad"):
        return [(i, i, "read") for i in inputs] + [(o, o, "write") for o in outputs]
    if region == "backward":
        needed = () if scalar_loss(operation_spec, workload_spec) else BACKWARD_READS.get(operation, tuple(inputs))
        return upstream + [(i, i, "read") for i in inputs if i in needed] + grads
    return [(i, i, "read") for i in inputs] + upstream + [(o, o, "write") for o in outputs] + grads


def compulsory_traffic(
    operation_spec: dict, workload_spec: dict, region: str = "forward", operation: str = "", *,
    distinct_ids: Mapping[str, int] | None = None,
) -> list[TensorTraffic]:
    """``distinct_ids``: the distinct ids per index input a run recorded (``gathers.recorded_distinct_ids``);
    a gathered table then counts the rows that run read, not the expectation (``gathers.gathered_rows``)."""
    axes = resolved_axes(operation_spec, workload_spec)
    concrete = {t["name"]: t for t in workload_spec["tensors"]}
    decls = {d["name"]: d for d in operation_spec["inputs"] + operation_spec["outputs"]}
    traffic: list[TensorTraffic] = []
    for label, name, direction in _region_plan(operation_spec, workload_spec, region, operation):
        gather_ok = direction == "read" and label == name  # the gather bound holds for the input itself
        decl = decls[name] if gather_ok else {k: v for k, v in decls[name].items() if k != "gather_rows"}
        size, note = _tensor_bytes(decl, concrete[name], axes, direction, operation, concrete, distinct_ids)
        traffic.append(TensorTraffic(label, direction, size, note))
    return traffic
