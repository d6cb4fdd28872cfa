"""Fresh random inputs for a workload case, with the case's exact shapes, dtypes and strides."""

from __future__ import annotations

import torch

from kernelindex.domain.manifests import OperationSpec, WorkloadCase
from kernelindex.domain.specs import ConcreteTensor
from kernelindex.runner.definitions import OperationDef, Tensors

TORCH_DTYPES = {
    "fp64": torch.float64, "fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16,
    "int64": torch.int64, "int32": torch.int32,
}


def torch_dtype(name: str) -> torch.dtype:
    try:
        return TORCH_DTYPES[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} has no torch equivalent in the runner") from None


def tensor_decls(workload: WorkloadCase) -> dict[str, ConcreteTensor]:
    return {t.name: t for t in workload.spec.tensors}


def output_names(operation: OperationSpec) -> list[str]:
    return [t.name for t in operation.spec.outputs]


def output_nbytes(operation: OperationSpec, workload: WorkloadCase) -> list[int]:
    decls = tensor_decls(workload)
    sizes = []
    for name in output_names(operation):
        decl = decls[name]
        count = 1
        for dim in decl.shape:
            count *= dim
        sizes.append(count * torch.empty((), dtype=torch_dtype(decl.dtype)).element_size())
    return sizes


def place(values: torch.Tensor, decl: ConcreteTensor, device: torch.device) -> torch.Tensor:
    """Copy values into a tensor with the declared shape and strides (physical layout)."""
    out = torch.empty_strided(tuple(decl.shape), tuple(decl.strides), dtype=torch_dtype(decl.dtype), device=device)
    out.copy_(values)
    return out


def randn(decl: ConcreteTensor, gen: torch.Generator, device: torch.device, scale: float = 1.0) -> torch.Tensor:
    """N(0, scale²) values with the declared shape, dtype and strides."""
    values = torch.randn(tuple(decl.shape), generator=gen, device=device, dtype=torch.float32)
    return place(values * scale if scale != 1.0 else values, decl, device)


def make_inputs(op: OperationDef, workload: WorkloadCase, seed: int, device: torch.device | str) -> Tensors:
    """A fresh random input set (never zeros) for ``seed``, from the operation's input maker."""
    device = torch.device(device)
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return op.make_inputs(workload, gen, device)
