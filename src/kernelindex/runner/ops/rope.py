"""rope: Llama rotate_half rotary embedding on q [1, q_heads, seq, d] and k [1, kv_heads, seq, d]
(views of [1, seq, heads, d] storage, as in the Liger benchmark); cos/sin [1, seq, d]."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from kernelindex.domain.manifests import WorkloadCase
from kernelindex.domain.specs import ConcreteTensor
from kernelindex.runner.definitions import REGIONS, Adapter, Bound, OperationDef, Tensors
from kernelindex.runner.inputs import place, tensor_decls
from kernelindex.runner.ops._common import call_binders


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def reference(inputs: Tensors) -> Tensors:
    q, k = inputs["q"].double(), inputs["k"].double()
    cos, sin = inputs["cos"].double().unsqueeze(1), inputs["sin"].double().unsqueeze(1)
    return {"q_out": q * cos + rotate_half(q) * sin, "k_out": k * cos + rotate_half(k) * sin}


def rotary_table(seq: int, head_dim: int, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """Angles [1, seq, head_dim] of a real rotary table, cat(freqs, freqs) with base 10000, at a
    random position offset."""
    offset = int(torch.randint(0, 1 << 20, (1,), generator=gen, device=device).item())
    positions = torch.arange(offset, offset + seq, dtype=torch.float64, device=device)
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float64, device=device) / head_dim))
    angles = torch.outer(positions, inv_freq)
    return torch.cat((angles, angles), dim=-1).unsqueeze(0)


def make_inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    decls = tensor_decls(workload)
    seq, head_dim = decls["cos"].shape[1], decls["cos"].shape[2]
    return rotary_inputs(decls, rotary_table(seq, head_dim, gen, device), gen, device)


def rotary_inputs(decls: dict[str, ConcreteTensor], angles: torch.Tensor, gen: torch.Generator,
                  device: torch.device) -> Tensors:
    """q, k ~ N(0, 1) (drawn after the angles) and the angles' cos/sin, each placed in its declared strides."""
    values = {
        "q": torch.randn(decls["q"].shape, generator=gen, device=device),
        "k": torch.randn(decls["k"].shape, generator=gen, device=device),
        "cos": angles.cos(),
        "sin": angles.sin(),
    }
    return {name: place(values[name], decls[name], device) for name in ("q", "k", "cos", "sin")}


def _hf_rope() -> Callable[..., Any]:
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    return apply_rotary_pos_emb


def _call(fn: Callable[..., Any], x: Tensors) -> Bound:
    def call() -> Tensors:
        q_out, k_out = fn(x["q"], x["k"], x["cos"], x["sin"])
        return {"q_out": q_out, "k_out": k_out}

    return call


_bind_baseline, _bind_compile, _bind_liger = call_binders(_call, _hf_rope)


def adapters() -> list[Adapter]:
    hf = "transformers.models.llama.modeling_llama"
    return [
        Adapter("baseline", "rope", "transformers-rope", "Transformers", "transformers", "python", hf,
                "apply_rotary_pos_emb", ("transformers", "torch"), (hf,), _bind_baseline, role="baseline"),
        Adapter("liger", "rope", "liger-kernel-rope", "Liger", "liger-kernel", "triton",
                "liger_kernel.transformers.rope", "liger_rotary_pos_emb", ("liger-kernel", "torch", "triton"),
                ("liger_kernel.transformers.rope",), _bind_liger, in_place=True),
        Adapter("torch-compile", "rope", "torch-compile-rope", "torch.compile", "pytorch", "python", "torch",
                f"compile({hf}.apply_rotary_pos_emb)", ("torch", "transformers", "triton"), (hf,), _bind_compile),
    ]


OPERATIONS = [OperationDef("rope", make_inputs, reference, adapters, grad_inputs=("q", "k"), regions=REGIONS)]
