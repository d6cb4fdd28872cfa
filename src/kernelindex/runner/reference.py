"""Reference semantics in plain PyTorch, evaluated in float64.

Each function takes the operation's inputs by name (any dtype, any layout) and returns its outputs
by name as float64 tensors. Correctness compares an implementation against these.
"""

from __future__ import annotations

import torch

Tensors = dict[str, torch.Tensor]


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope(inputs: Tensors) -> Tensors:
    """Llama rotate_half RoPE: q [1, q_heads, seq, d], k [1, kv_heads, seq, d], cos/sin [1, seq, d]."""
    q, k = inputs["q"].double(), inputs["k"].double()
    cos, sin = inputs["cos"].double().unsqueeze(1), inputs["sin"].double().unsqueeze(1)
    return {"q_out": q * cos + rotate_half(q) * sin, "k_out": k * cos + rotate_half(k) * sin}


def embedding(inputs: Tensors) -> Tensors:
    """y[b, s, :] = weight[input_ids[b, s], :]."""
    return {"y": inputs["weight"].double()[inputs["input_ids"]]}


REFERENCES = {"rope": rope, "embedding": embedding}
