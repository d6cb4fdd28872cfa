"""qwen2vl-mrope: Qwen2-VL's multimodal rotary embedding on q [1, q_heads, seq, d] and k [1, kv_heads, seq, d]
(views of [1, seq, heads, d] storage, as in the Liger benchmark), with cos/sin [3, 1, seq, d]: one rotary
table per position stream (temporal, height, width). Each column of the head takes its angle from one
stream, by ``mrope_section`` = [d/2 − 2s, s, s], s = 3d // 16, repeated over both halves of the head.

The baseline is Transformers' Qwen2-VL M-RoPE. Transformers 5 (5.17 on the runner) no longer has
``apply_multimodal_rotary_pos_emb``, the function the Liger benchmark called: the same model's code now
interleaves the streams in ``Qwen2VLRotaryEmbedding.recomposition_frequencies`` (from the tables' first
half, then duplicated) and rotates with the module's ``apply_rotary_pos_emb``; the adapter calls those two.
Liger's kernel, like its rope, writes q_out and k_out into q's and k's storage.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import torch

from kernelindex.domain.manifests import WorkloadCase
from kernelindex.runner.definitions import REGIONS, Adapter, Bound, OperationDef, Tensors
from kernelindex.runner.inputs import tensor_decls
from kernelindex.runner.ops._common import LIGER, call_binders
from kernelindex.runner.ops.rope import rotary_inputs, rotary_table, rotate_half

HF = "transformers.models.qwen2_vl.modeling_qwen2_vl"
HF_SYMBOL = "Qwen2VLRotaryEmbedding.recomposition_frequencies + apply_rotary_pos_emb"
HF_DESCRIPTION = (
    "Transformers' Qwen2-VL M-RoPE as Transformers 5 runs it: recomposition_frequencies interleaves the "
    "three position streams, apply_rotary_pos_emb rotates q and k (Transformers 4's apply_multimodal_rotary_pos_emb, "
    "which the Liger benchmark called, did both and is gone from Transformers 5)."
)


def mrope_section(head_dim: int) -> list[int]:
    """Columns of each stream (temporal, height, width) in one half of the head."""
    side = 3 * head_dim // 16
    return [head_dim // 2 - 2 * side, side, side]


def stream_of_column(head_dim: int, device: torch.device) -> torch.Tensor:
    """For each of the head's columns, the position stream (0 t, 1 h, 2 w) its angle comes from."""
    half = torch.repeat_interleave(torch.arange(3, device=device),
                                   torch.tensor(mrope_section(head_dim), device=device))
    return torch.cat((half, half))


def interleaved(table: torch.Tensor) -> torch.Tensor:
    """[3, 1, seq, d] per-stream tables → [1, 1, seq, d]: column j from stream ``stream_of_column[j]``."""
    streams = table[:, 0]  # [3, seq, d]
    pick = stream_of_column(table.shape[-1], table.device).expand(1, streams.shape[1], -1)
    return streams.gather(0, pick).unsqueeze(1)


def reference(inputs: Tensors) -> Tensors:
    q, k = inputs["q"].double(), inputs["k"].double()
    cos, sin = interleaved(inputs["cos"].double()), interleaved(inputs["sin"].double())
    return {"q_out": q * cos + rotate_half(q) * sin, "k_out": k * cos + rotate_half(k) * sin}


def make_inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    """q, k ~ N(0, 1) in the case's strides; cos/sin from three real rotary tables (base 10000), one per
    stream, each at its own random position offset, so a kernel that mixes up the streams fails."""
    decls = tensor_decls(workload)
    _, _, seq, head_dim = decls["cos"].shape
    angles = torch.cat([rotary_table(seq, head_dim, gen, device) for _ in range(3)]).unsqueeze(1)
    return rotary_inputs(decls, angles, gen, device)


def _transformers_mrope() -> Callable[..., Any]:
    """q, k, cos, sin, section → (q_out, k_out) with Transformers' Qwen2-VL functions."""
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding, apply_rotary_pos_emb

    def mrope(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
              section: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        # recomposition_frequencies reads only self.mrope_section; it takes the tables' first half
        holder, half = SimpleNamespace(mrope_section=section), cos.shape[-1] // 2
        cos_full = Qwen2VLRotaryEmbedding.recomposition_frequencies(holder, cos[..., :half])
        sin_full = Qwen2VLRotaryEmbedding.recomposition_frequencies(holder, sin[..., :half])
        return apply_rotary_pos_emb(q, k, cos_full, sin_full)
    return mrope


def _call(fn: Callable[..., Any], x: Tensors) -> Bound:
    section = mrope_section(x["q"].shape[-1])

    def call() -> Tensors:
        q_out, k_out = fn(x["q"], x["k"], x["cos"], x["sin"], section)
        return {"q_out": q_out, "k_out": k_out}
    return call


_bind_baseline, _bind_compile, _bind_liger = call_binders(_call, _transformers_mrope)


def adapters() -> list[Adapter]:
    slug, liger_module = "qwen2vl-mrope", "liger_kernel.transformers.qwen2vl_mrope"
    return [
        Adapter("baseline", slug, "transformers-qwen2vl-mrope", "Transformers", "transformers", "python", HF,
                HF_SYMBOL, ("transformers", "torch"), (HF,), _bind_baseline, role="baseline",
                description=HF_DESCRIPTION),
        Adapter("liger", slug, "liger-kernel-qwen2vl-mrope", "Liger", "liger-kernel", "triton", liger_module,
                "liger_multimodal_rotary_pos_emb", LIGER, (liger_module,), _bind_liger, in_place=True),
        Adapter("torch-compile", slug, "torch-compile-qwen2vl-mrope", "torch.compile", "pytorch", "python", "torch",
                f"compile({HF}.{HF_SYMBOL})", ("torch", "transformers", "triton"), (HF,), _bind_compile),
    ]


# The spec declares no may_alias (its outputs are layout: any); Liger writes q_out/k_out into q's and k's
# storage, so an implementation declared in place may overwrite them.
OPERATIONS = [OperationDef("qwen2vl-mrope", make_inputs, reference, adapters, grad_inputs=("q", "k"),
                           regions=REGIONS, overwrites=("q", "k"))]
