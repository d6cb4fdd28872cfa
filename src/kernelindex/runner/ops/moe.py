"""fused-moe: the expert MLPs of a top-k routed mixture of experts, with the routing given.

y[t] = Σ_j top_k_weights[t, j] · down_proj[e] @ (silu(g) ⊙ u), (g, u) = halves of gate_up_proj[e] @ x[t],
e = top_k_index[t, j]. The Liger benchmark's baseline is a Mixtral-style per-expert Python loop written in
the script, so the baseline here is KernelIndex's own plain-PyTorch per-expert loop. Like the script's, it
looks up each expert's tokens with ``torch.where`` (a host synchronisation per expert), and Liger's
function synchronises once to size its tiles: neither can be captured in a CUDA graph.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from kernelindex.domain.manifests import WorkloadCase
from kernelindex.runner.definitions import REGIONS, Adapter, Bound, OperationDef, Tensors
from kernelindex.runner.ops._common import compiled, liger, our_baseline, place, randn, shape, torch_compile

SLUG = "fused-moe"
MODULE = "kernelindex.runner.ops.moe"
ARGS = ("x", "gate_up_proj", "down_proj", "top_k_index", "top_k_weights")


def _inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    tokens, top_k = shape(workload, "top_k_index")
    experts, _, hidden = shape(workload, "gate_up_proj")
    intermediate = shape(workload, "down_proj")[-1]
    router_logits = torch.randn((tokens, experts), generator=gen, device=device)
    chosen = router_logits.topk(top_k, dim=-1)  # distinct experts per token, as a router picks them
    values = {
        "x": randn(workload, "x", gen, device),
        "gate_up_proj": randn(workload, "gate_up_proj", gen, device, scale=hidden**-0.5),
        "down_proj": randn(workload, "down_proj", gen, device, scale=intermediate**-0.5),
        "top_k_index": chosen.indices,
        "top_k_weights": chosen.values.softmax(-1),
    }
    return place(values, workload, device)


def moe_experts(x: torch.Tensor, gate_up_proj: torch.Tensor, down_proj: torch.Tensor, top_k_index: torch.Tensor,
                top_k_weights: torch.Tensor) -> torch.Tensor:
    """Per-expert loop: gather the expert's tokens, gated MLP, scale by the routing weight, scatter-add."""
    out = torch.zeros_like(x)
    for expert in range(gate_up_proj.shape[0]):
        token, slot = torch.where(top_k_index == expert)
        if token.numel() == 0:
            continue
        gate, up = F.linear(x[token], gate_up_proj[expert]).chunk(2, dim=-1)
        hidden = F.linear(F.silu(gate) * up, down_proj[expert])
        out = out.index_add(0, token, hidden * top_k_weights[token, slot].unsqueeze(-1))
    return out


def reference(x: Tensors) -> Tensors:
    args = [x[name].double() if x[name].is_floating_point() else x[name] for name in ARGS]
    return {"y": moe_experts(*args)}


def torch_moe_experts(x: torch.Tensor, gate_up_proj: torch.Tensor, down_proj: torch.Tensor, top_k_index: torch.Tensor,
                      top_k_weights: torch.Tensor) -> torch.Tensor:
    """Mixtral-style per-expert Python loop in the inputs' dtype."""
    return moe_experts(x, gate_up_proj, down_proj, top_k_index, top_k_weights)


def _bind_ours(adapter: Adapter, x: Tensors) -> Bound:
    args = [x[name] for name in ARGS]
    return lambda: {"y": torch_moe_experts(*args)}


def _bind_compile(adapter: Adapter, x: Tensors) -> Bound:
    args, call = [x[name] for name in ARGS], compiled(adapter, lambda: torch_moe_experts)
    return lambda: {"y": call(*args)}


def _bind_liger(adapter: Adapter, x: Tensors) -> Bound:
    from liger_kernel.ops.fused_moe import LigerFusedMoEFunction

    args = [x[name] for name in ARGS]
    return lambda: {"y": LigerFusedMoEFunction.apply(*args)}


def adapters() -> list[Adapter]:
    return [
        our_baseline(SLUG, MODULE, "torch_moe_experts", _bind_ours),
        liger(SLUG, "liger-kernel-fused-moe", "liger_kernel.ops.fused_moe", "LigerFusedMoEFunction", _bind_liger),
        torch_compile(SLUG, f"{MODULE}.torch_moe_experts", _bind_compile),
    ]


OPERATIONS = [OperationDef(SLUG, _inputs, reference, adapters,
                           grad_inputs=("x", "gate_up_proj", "down_proj", "top_k_weights"), regions=REGIONS,
                           index_inputs=("top_k_index",))]
