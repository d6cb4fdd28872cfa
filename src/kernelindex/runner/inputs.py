"""Fresh random inputs for a workload case, with the case's exact shapes, dtypes and strides."""

from __future__ import annotations

import torch
from pydantic import BaseModel

TORCH_DTYPES = {
    "fp64": torch.float64, "fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16,
    "int64": torch.int64, "int32": torch.int32,
}


def torch_dtype(name: str) -> torch.dtype:
    try:
        return TORCH_DTYPES[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} has no torch equivalent in the runner") from None


def tensor_decls(workload: BaseModel) -> dict[str, BaseModel]:
    return {t.name: t for t in workload.spec.tensors}


def input_names(operation: BaseModel) -> list[str]:
    return [t.name for t in operation.spec.inputs]


def output_names(operation: BaseModel) -> list[str]:
    return [t.name for t in operation.spec.outputs]


def output_nbytes(operation: BaseModel, workload: BaseModel) -> list[int]:
    decls = tensor_decls(workload)
    sizes = []
    for name in output_names(operation):
        decl = decls[name]
        count = 1
        for dim in decl.shape:
            count *= dim
        sizes.append(count * torch.empty((), dtype=torch_dtype(decl.dtype)).element_size())
    return sizes


def _place(values: torch.Tensor, decl: BaseModel, device: torch.device) -> torch.Tensor:
    """Copy values into a tensor with the declared shape and strides (physical layout)."""
    out = torch.empty_strided(tuple(decl.shape), tuple(decl.strides), dtype=torch_dtype(decl.dtype), device=device)
    out.copy_(values)
    return out


def _rope_inputs(workload: BaseModel, gen: torch.Generator, device: torch.device) -> dict[str, torch.Tensor]:
    decls = tensor_decls(workload)
    seq, head_dim = decls["cos"].shape[1], decls["cos"].shape[2]
    # Real rotary tables (cat(freqs, freqs), base 10000) at a random position offset.
    offset = int(torch.randint(0, 1 << 20, (1,), generator=gen, device=device).item())
    positions = torch.arange(offset, offset + seq, dtype=torch.float64, device=device)
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float64, device=device) / head_dim))
    angles = torch.outer(positions, inv_freq)
    table = torch.cat((angles, angles), dim=-1).unsqueeze(0)
    values = {
        "q": torch.randn(decls["q"].shape, generator=gen, device=device),
        "k": torch.randn(decls["k"].shape, generator=gen, device=device),
        "cos": table.cos(),
        "sin": table.sin(),
    }
    return {name: _place(values[name], decls[name], device) for name in ("q", "k", "cos", "sin")}


def _embedding_inputs(workload: BaseModel, gen: torch.Generator, device: torch.device) -> dict[str, torch.Tensor]:
    decls = tensor_decls(workload)
    vocab = decls["weight"].shape[0]
    ids = torch.randint(0, vocab, tuple(decls["input_ids"].shape), generator=gen, device=device)
    weight = torch.randn(decls["weight"].shape, generator=gen, device=device)
    return {"input_ids": _place(ids, decls["input_ids"], device), "weight": _place(weight, decls["weight"], device)}


MAKERS = {"rope": _rope_inputs, "embedding": _embedding_inputs}


def make_inputs(
    operation_slug: str, workload: BaseModel, seed: int, device: torch.device | str
) -> dict[str, torch.Tensor]:
    """A fresh random input set (never zeros) for ``seed``."""
    device = torch.device(device)
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    try:
        maker = MAKERS[operation_slug]
    except KeyError:
        raise ValueError(f"the runner has no input generator for operation {operation_slug!r}") from None
    return maker(workload, gen, device)
