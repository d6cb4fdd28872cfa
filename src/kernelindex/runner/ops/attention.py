"""Attention variants: multi-token attention (dense and sparse) and fused neighborhood attention.

Multi-token attention: a causal softmax (or sparsemax) over [batch, heads, seq, seq] scores, a K×K
convolution across heads (padding K // 2), the upper triangle zeroed again. Neighborhood attention: q/k/v
projections, each query attending only to keys within (kernel_size // 2) · dilation positions on the
dilation grid, then the output projection; ``kernel_size`` and ``dilation`` are workload parameters. Both
baselines live in Liger's benchmark scripts, so the baseline here is KernelIndex's own plain PyTorch.

Multi-token attention convolves with cuDNN, which by default runs float32 convolutions in TF32 (about
1e-3 relative error, over the float32 tolerance): its binders turn cuDNN's TF32 off for the process, so
that float32 means float32 for every implementation alike (forward and backward; bf16 is unaffected).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from kernelindex.domain.manifests import WorkloadCase
from kernelindex.runner.definitions import REGIONS, Adapter, Bound, OperationDef, Tensors
from kernelindex.runner.ops._common import (
    compiled,
    liger,
    our_baseline,
    params_of,
    place,
    randn,
    shape,
    torch_compile,
    with_params,
)

MODULE = "kernelindex.runner.ops.attention"


def sparsemax(z: torch.Tensor) -> torch.Tensor:
    """Sparsemax over the last dimension (Martins & Astudillo, 2016); ``-inf`` entries get exactly 0."""
    z = z - z.max(-1, keepdim=True).values
    ordered = z.sort(-1, descending=True).values
    ranks = torch.arange(1, z.shape[-1] + 1, device=z.device, dtype=z.dtype)
    cumulative = ordered.cumsum(-1)
    support = (1 + ranks * ordered > cumulative).sum(-1, keepdim=True)
    tau = (cumulative.gather(-1, support - 1) - 1) / support.to(z.dtype)
    return (z - tau).clamp(min=0)


# --- multi-token attention -------------------------------------------------------------------------------


def _mta_inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    out_channels, fan_in, kernel, _ = shape(workload, "weight")
    values = {
        "scores": randn(workload, "scores", gen, device),
        "weight": randn(workload, "weight", gen, device, scale=(fan_in * kernel * kernel) ** -0.5),
        "bias": randn(workload, "bias", gen, device, scale=0.1),
    }
    return place(values, workload, device)


def multi_token_attention(scores: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, sparse: bool) -> torch.Tensor:
    """Causal softmax (sparsemax) of the scores, K×K convolution across heads, upper triangle zeroed."""
    seq, kernel = scores.shape[-1], weight.shape[-1]
    causal = torch.ones(seq, seq, dtype=torch.bool, device=scores.device).tril()
    masked = scores.masked_fill(~causal, float("-inf"))
    probs = sparsemax(masked) if sparse else masked.softmax(-1)
    groups = scores.shape[1] // weight.shape[1]
    return F.conv2d(probs, weight, bias, padding=kernel // 2, groups=groups).masked_fill(~causal, 0.0)


def torch_multi_token_attention(scores: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Multi-token attention with a causal softmax, in the inputs' dtype."""
    return multi_token_attention(scores, weight, bias, sparse=False)


def torch_sparse_multi_token_attention(scores: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Multi-token attention with a causal sparsemax, in the inputs' dtype."""
    return multi_token_attention(scores, weight, bias, sparse=True)


def _mta_reference(sparse: bool) -> Callable[[Tensors], Tensors]:
    def reference(x: Tensors) -> Tensors:
        return {"y": multi_token_attention(x["scores"].double(), x["weight"].double(), x["bias"].double(), sparse)}
    return reference


def full_fp32_convolutions() -> None:
    """cuDNN float32 convolutions in float32, not TF32 (set when binding, so it holds for the backward too)."""
    torch.backends.cudnn.allow_tf32 = False


def _mta_operation(slug: str, sparse: bool) -> OperationDef:
    fn = torch_sparse_multi_token_attention if sparse else torch_multi_token_attention

    def ours(adapter: Adapter, x: Tensors) -> Bound:
        full_fp32_convolutions()
        return lambda: {"y": fn(x["scores"], x["weight"], x["bias"])}

    def compile_(adapter: Adapter, x: Tensors) -> Bound:
        full_fp32_convolutions()
        call = compiled(adapter, lambda: fn)
        return lambda: {"y": call(x["scores"], x["weight"], x["bias"])}

    def liger_(adapter: Adapter, x: Tensors) -> Bound:
        from liger_kernel.transformers.functional import liger_multi_token_attention

        full_fp32_convolutions()
        kernel, groups = x["weight"].shape[-1], x["scores"].shape[1] // x["weight"].shape[1]
        return lambda: {"y": liger_multi_token_attention(x["scores"], x["weight"], x["bias"], stride=1,
                                                         padding=kernel // 2, groups=groups, sparse=sparse)}

    def adapters() -> list[Adapter]:
        return [
            our_baseline(slug, MODULE, fn.__name__, ours),
            liger(slug, f"liger-kernel-{slug}", "liger_kernel.transformers.multi_token_attention",
                  "LigerMultiTokenAttention(sparse=True)" if sparse else "LigerMultiTokenAttention", liger_),
            torch_compile(slug, f"{MODULE}.{fn.__name__}", compile_),
        ]
    return OperationDef(slug, _mta_inputs, _mta_reference(sparse), adapters, grad_inputs=("scores", "weight", "bias"),
                        regions=REGIONS)


# --- fused neighborhood attention --------------------------------------------------------------------------

NA_DEFAULTS = {"kernel_size": 7, "dilation": 1}
PROJECTIONS = ("q", "k", "v", "out")
NA_ARGS = ("x", *(f"{p}_{part}" for p in PROJECTIONS for part in ("weight", "bias")))


def _na_inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    hidden = shape(workload, "x")[-1]
    values = {"x": randn(workload, "x", gen, device)}
    for p in PROJECTIONS:
        values[f"{p}_weight"] = randn(workload, f"{p}_weight", gen, device, scale=hidden**-0.5)
        values[f"{p}_bias"] = randn(workload, f"{p}_bias", gen, device, scale=0.1)
    inputs = with_params(place(values, workload, device), workload, NA_DEFAULTS)
    inputs["param:heads"] = torch.tensor(int(workload.spec.axes["heads"]))
    return inputs


def neighborhood_mask(seq: int, kernel_size: int, dilation: int, device: torch.device) -> torch.Tensor:
    offset = torch.arange(seq, device=device).unsqueeze(0) - torch.arange(seq, device=device).unsqueeze(1)
    return (offset.abs() <= (kernel_size // 2) * dilation) & (offset % dilation == 0)


def _heads(t: torch.Tensor, heads: int) -> torch.Tensor:
    batch, seq, hidden = t.shape
    return t.view(batch, seq, heads, hidden // heads).transpose(1, 2)


def neighborhood_attention(x: Tensors, heads: int, kernel_size: int, dilation: int,
                           attend: Callable[..., torch.Tensor] | None = None) -> torch.Tensor:
    """Projections, windowed attention (``attend``, or masked dense attention), output projection."""
    q, k, v = (_heads(F.linear(x["x"], x[f"{p}_weight"], x[f"{p}_bias"]), heads) for p in ("q", "k", "v"))
    scale = q.shape[-1] ** -0.5
    if attend is None:
        mask = neighborhood_mask(q.shape[2], kernel_size, dilation, q.device)
        scores = (q @ k.transpose(-2, -1) * scale).masked_fill(~mask, float("-inf"))
        attended = scores.softmax(-1) @ v
    else:
        attended = attend(q, k, v, kernel_size, dilation, scale)
    batch, _, seq, _ = attended.shape
    return F.linear(attended.transpose(1, 2).reshape(batch, seq, -1), x["out_weight"], x["out_bias"])


def na_reference(x: Tensors) -> Tensors:
    p = params_of(x)
    doubled = {name: x[name].double() for name in NA_ARGS}
    return {"y": neighborhood_attention(doubled, int(p["heads"]), int(p["kernel_size"]), int(p["dilation"]))}


def torch_neighborhood_attention(x: Tensors, heads: int, kernel_size: int, dilation: int) -> torch.Tensor:
    """q/k/v projections, dense attention masked to the dilated neighborhood, output projection."""
    return neighborhood_attention(x, heads, kernel_size, dilation)


def _na_call(x: Tensors) -> tuple[Tensors, int, int, int]:
    p = params_of(x)
    return {name: x[name] for name in NA_ARGS}, int(p["heads"]), int(p["kernel_size"]), int(p["dilation"])


def _bind_na(adapter: Adapter, x: Tensors) -> Bound:
    args = _na_call(x)
    return lambda: {"y": torch_neighborhood_attention(*args)}


def _bind_na_compile(adapter: Adapter, x: Tensors) -> Bound:
    args, call = _na_call(x), compiled(adapter, lambda: torch_neighborhood_attention)
    return lambda: {"y": call(*args)}


def _bind_na_liger(adapter: Adapter, x: Tensors) -> Bound:
    """What ``LigerFusedNeighborhoodAttention.forward`` runs, with the projections' weights as inputs."""
    from liger_kernel.ops.fused_neighborhood_attention import LigerFusedNeighborhoodAttentionFunction

    args = _na_call(x)
    return lambda: {"y": neighborhood_attention(*args, attend=LigerFusedNeighborhoodAttentionFunction.apply)}


def _na_adapters() -> list[Adapter]:
    slug = "fused-neighborhood-attention"
    return [
        our_baseline(slug, MODULE, "torch_neighborhood_attention", _bind_na),
        liger(slug, "liger-kernel-fused-neighborhood-attention",
              "liger_kernel.transformers.fused_neighborhood_attention", "LigerFusedNeighborhoodAttention",
              _bind_na_liger),
        torch_compile(slug, f"{MODULE}.torch_neighborhood_attention", _bind_na_compile),
    ]


# k_bias adds q·b_k to every score of a query's row, which softmax ignores: its gradient is zero in exact
# arithmetic, so no relative error can judge it; it is left out of the gradients a backward region checks.
NA_GRADS = tuple(name for name in NA_ARGS if name != "k_bias")

OPERATIONS = [
    _mta_operation("multi-token-attention", sparse=False),
    _mta_operation("sparse-multi-token-attention", sparse=True),
    OperationDef("fused-neighborhood-attention", _na_inputs, na_reference, _na_adapters,
                 grad_inputs=NA_GRADS, regions=REGIONS),
]
