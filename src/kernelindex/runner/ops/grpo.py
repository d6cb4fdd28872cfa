"""LM head fused with the GRPO policy loss: fused-linear-grpo-loss-token and -sequence (GSPO).

As the Liger benchmark runs it (the wrappers of Liger's GRPO tests): beta 0.1, epsilon 0.2 both sides,
temperature 1, a reference head on ``ref_x``, ``loss_type`` "bnpo" (masked tokens summed, divided by the
mask's sum), and the old log-probabilities taken as the current ones detached, so the ratio is 1 in value
while its gradient flows. Token level: one ratio per token; sequence level: exp of the masked mean of the
per-token log-ratios, one per sequence. The baseline lives in Liger's tests, so the baseline here is
KernelIndex's own plain PyTorch.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from kernelindex.domain.manifests import WorkloadCase
from kernelindex.runner.definitions import REGIONS, Adapter, Bound, OperationDef, Tensors
from kernelindex.runner.ops._common import (
    at_least_fp32,
    compiled,
    liger,
    loss_as,
    our_baseline,
    place,
    reference_token_logps,
    shape,
    torch_compile,
)
from kernelindex.runner.ops.fused_linear import hidden_states, lm_head

MODULE = "kernelindex.runner.ops.grpo"
BETA = 0.1
EPSILON_LOW = EPSILON_HIGH = 0.2
ARGS = ("x", "weight", "selected_token_ids", "attention_mask", "advantages", "ref_x", "ref_weight")


def _inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    batch, seq = shape(workload, "selected_token_ids")
    vocab = shape(workload, "weight")[0]
    weight = lm_head(workload, "weight", gen, device)
    # completions of different lengths: each keeps at least half of its tokens, the rest is padding
    lengths = torch.randint(max(1, seq // 2), seq + 1, (batch, 1), generator=gen, device=device)
    values = {
        "x": hidden_states(workload, "x", gen, device),
        "weight": weight,
        "selected_token_ids": torch.randint(0, vocab, (batch, seq), generator=gen, device=device),
        "attention_mask": (torch.arange(seq, device=device).unsqueeze(0) < lengths).float(),
        "advantages": torch.randn((batch,), generator=gen, device=device),
        "ref_x": hidden_states(workload, "ref_x", gen, device),
        "ref_weight": weight + lm_head(workload, "ref_weight", gen, device) * 0.05,  # a nearby reference policy
    }
    return place(values, workload, device)


def _token_logps(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    return logits.log_softmax(-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)


def grpo_loss(logp: torch.Tensor, ref_logp: torch.Tensor, x: Tensors, level: str) -> torch.Tensor:
    """bnpo GRPO loss from the policy's and the reference head's log-probabilities of the selected tokens."""
    ref_logp = ref_logp.detach()
    mask = x["attention_mask"].to(logp.dtype)
    log_ratio = logp - logp.detach()
    if level == "sequence":
        log_ratio = ((log_ratio * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).unsqueeze(-1)
    ratio = log_ratio.exp()
    advantages = x["advantages"].to(logp.dtype).unsqueeze(1)
    clipped = ratio.clamp(1 - EPSILON_LOW, 1 + EPSILON_HIGH)
    per_token = -torch.min(ratio * advantages, clipped * advantages)
    per_token = per_token + BETA * ((ref_logp - logp).exp() - (ref_logp - logp) - 1)
    return (per_token * mask).sum() / mask.sum().clamp(min=1.0)


def _reference(level: str) -> Callable[[Tensors], Tensors]:
    def reference(x: Tensors) -> Tensors:
        logp = reference_token_logps(x["x"], x["weight"], x["selected_token_ids"])
        with torch.no_grad():
            ref_logp = reference_token_logps(x["ref_x"], x["ref_weight"], x["selected_token_ids"])
        return {"loss": grpo_loss(logp, ref_logp, x, level)}
    return reference


def torch_grpo(x: Tensors, level: str) -> torch.Tensor:
    """GRPO (bnpo) on float32 logits of the policy and reference heads."""
    logp = _token_logps(at_least_fp32(x["x"] @ x["weight"].T), x["selected_token_ids"])
    with torch.no_grad():
        ref_logp = _token_logps(at_least_fp32(x["ref_x"] @ x["ref_weight"].T), x["selected_token_ids"])
    return grpo_loss(logp, ref_logp, x, level).float()


def _binders(level: str) -> tuple[Callable[[Adapter, Tensors], Bound], ...]:
    def ours(adapter: Adapter, x: Tensors) -> Bound:
        args = {name: x[name] for name in ARGS}
        return lambda: {"loss": torch_grpo(args, level)}

    def compile_(adapter: Adapter, x: Tensors) -> Bound:
        args, call = {name: x[name] for name in ARGS}, compiled(adapter, lambda: torch_grpo)
        return lambda: {"loss": call(args, level)}

    def liger_(adapter: Adapter, x: Tensors) -> Bound:
        from liger_kernel.chunked_loss import LigerFusedLinearGRPOLoss

        loss = LigerFusedLinearGRPOLoss(beta=BETA, epsilon_low=EPSILON_LOW, epsilon_high=EPSILON_HIGH, temperature=1.0,
                                        use_ref_model=True, compiled=True, loss_type="bnpo",
                                        importance_sampling_level=level)
        return lambda: loss_as(torch.float32, loss(
            x["x"], x["weight"], x["selected_token_ids"], x["attention_mask"], x["advantages"],
            ref_input=x["ref_x"], ref_weight=x["ref_weight"])[0])

    return ours, liger_, compile_


def _operation(level: str) -> OperationDef:
    slug = f"fused-linear-grpo-loss-{level}"

    def adapters() -> list[Adapter]:
        ours, liger_, compile_ = _binders(level)
        return [
            our_baseline(slug, MODULE, f"torch_grpo(importance_sampling_level={level!r})", ours),
            liger(slug, f"liger-kernel-{slug}", "liger_kernel.chunked_loss",
                  f"LigerFusedLinearGRPOLoss(importance_sampling_level={level!r})", liger_),
            torch_compile(slug, f"{MODULE}.torch_grpo", compile_),
        ]
    return OperationDef(slug, _inputs, _reference(level), adapters, grad_inputs=("x", "weight"), regions=REGIONS)


OPERATIONS = [_operation("token"), _operation("sequence")]
