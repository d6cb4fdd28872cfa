"""LM head fused with a preference loss: CPO, ORPO, SimPO (paired) and KTO (unpaired, with a reference head).

Per sequence, ``logp`` is the mean log-probability of its target tokens under ``x @ weight^T`` (tokens
equal to ``ignore_index`` left out). Paired losses: the first ``batch // 2`` sequences are the chosen
responses, the rest the rejected ones; the NLL term is the token-mean cross-entropy of the chosen half.
The constants are those of the operation specs (CPO alpha 1, beta 0.1; ORPO beta 0.1; SimPO beta 0.1,
gamma 0.5); KTO's ``beta`` and ``ignore_index`` are workload parameters.

The baselines live in Liger's benchmark scripts (TRL-derived classes from its tests), so the baseline
here is KernelIndex's own plain PyTorch. Liger's CPO and KTO functions sum the log-probabilities unless
``average_log_prob`` is set; they are called with it set, which is the operations' semantics.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from kernelindex.domain.manifests import WorkloadCase
from kernelindex.runner.definitions import REGIONS, Adapter, Bound, OperationDef, Tensors
from kernelindex.runner.ops._common import (
    at_least_fp32,
    compiled,
    liger,
    loss_as,
    our_baseline,
    params_of,
    place,
    randn,
    reference_token_logps,
    shape,
    targets,
    torch_compile,
    with_params,
)
from kernelindex.runner.ops.fused_linear import hidden_states, linear_loss_inputs, lm_head

MODULE = "kernelindex.runner.ops.preference"
IGNORE_INDEX = -100
BETA = 0.1
SIMPO_GAMMA = 0.5
Pair = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (chosen logp, rejected logp) → preference term


def token_logps(logits: torch.Tensor, target: torch.Tensor, ignore_index: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probability of each target token (0 where ignored), and which tokens count."""
    kept = target != ignore_index
    per_token = logits.log_softmax(-1).gather(-1, torch.where(kept, target, 0).unsqueeze(-1)).squeeze(-1)
    return per_token * kept, kept


def reference_logps(
    x: torch.Tensor, weight: torch.Tensor, target: torch.Tensor, ignore_index: int, bias: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``token_logps`` of the head ``x @ weight^T + bias`` in float64, a chunk of sequences at a time."""
    kept = target != ignore_index
    return reference_token_logps(x, weight, torch.where(kept, target, 0), bias) * kept, kept


def mean_logps(logps: torch.Tensor, kept: torch.Tensor) -> torch.Tensor:
    """Mean log-probability of each sequence's counted tokens."""
    return logps.sum(-1) / kept.sum(-1)


def cpo_term(chosen: torch.Tensor, rejected: torch.Tensor) -> torch.Tensor:
    return -F.logsigmoid(BETA * (chosen - rejected)).mean()


def orpo_term(chosen: torch.Tensor, rejected: torch.Tensor) -> torch.Tensor:
    log_odds = (chosen - rejected) - (torch.log1p(-chosen.exp()) - torch.log1p(-rejected.exp()))
    return -BETA * F.logsigmoid(log_odds).mean()


def simpo_term(chosen: torch.Tensor, rejected: torch.Tensor) -> torch.Tensor:
    return -F.logsigmoid(BETA * (chosen - rejected) - SIMPO_GAMMA).mean()


def paired_loss(logps: torch.Tensor, kept: torch.Tensor, term: Pair) -> torch.Tensor:
    """Chosen-half NLL (token mean) plus the preference term of the per-sequence mean log-probabilities."""
    half = logps.shape[0] // 2
    nll = -logps[:half].sum() / kept[:half].sum()
    sequences = mean_logps(logps, kept)
    return nll + term(sequences[:half], sequences[half:])


def _paired_reference(term: Pair) -> Callable[[Tensors], Tensors]:
    def reference(x: Tensors) -> Tensors:
        return {"loss": paired_loss(*reference_logps(x["x"], x["weight"], x["target"], IGNORE_INDEX), term)}
    return reference


def torch_cpo(x: torch.Tensor, weight: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """CPO: chosen NLL − mean logsigmoid(beta · (logp_chosen − logp_rejected)), on float32 logits."""
    return paired_loss(*token_logps(at_least_fp32(F.linear(x, weight)), target, IGNORE_INDEX), cpo_term).float()


def torch_orpo(x: torch.Tensor, weight: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """ORPO: chosen NLL − beta · mean logsigmoid(log-odds ratio), on float32 logits."""
    return paired_loss(*token_logps(at_least_fp32(F.linear(x, weight)), target, IGNORE_INDEX), orpo_term).float()


def torch_simpo(x: torch.Tensor, weight: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """SimPO: chosen NLL − mean logsigmoid(beta · (logp_chosen − logp_rejected) − gamma), on float32 logits."""
    return paired_loss(*token_logps(at_least_fp32(F.linear(x, weight)), target, IGNORE_INDEX), simpo_term).float()


def _bind(fn: Callable[..., torch.Tensor]) -> Callable[[Adapter, Tensors], Bound]:
    def bind(adapter: Adapter, x: Tensors) -> Bound:
        return lambda: {"loss": fn(x["x"], x["weight"], x["target"])}
    return bind


def _bind_compiled(fn: Callable[..., torch.Tensor]) -> Callable[[Adapter, Tensors], Bound]:
    def bind(adapter: Adapter, x: Tensors) -> Bound:
        call = compiled(adapter, lambda: fn)
        return lambda: {"loss": call(x["x"], x["weight"], x["target"])}
    return bind


def _bind_liger_cpo(adapter: Adapter, x: Tensors) -> Bound:
    from liger_kernel.chunked_loss.cpo_loss import LigerFusedLinearCPOFunction

    # (input, weight, target, bias, ignore_index, beta, alpha, label_smoothing, compute_nll_loss, compiled,
    #  average_log_prob)
    args = (x["x"], x["weight"], x["target"], None, IGNORE_INDEX, BETA, 1.0, 0.0, True, True, True)
    return lambda: loss_as(torch.float32, LigerFusedLinearCPOFunction.apply(*args)[0])


def _bind_liger_orpo(adapter: Adapter, x: Tensors) -> Bound:
    from liger_kernel.chunked_loss.orpo_loss import LigerFusedLinearORPOFunction

    # (input, weight, target, bias, ignore_index, beta, compute_nll_loss)
    args = (x["x"], x["weight"], x["target"], None, IGNORE_INDEX, BETA, True)
    return lambda: loss_as(torch.float32, LigerFusedLinearORPOFunction.apply(*args)[0])


def _bind_liger_simpo(adapter: Adapter, x: Tensors) -> Bound:
    from liger_kernel.chunked_loss.simpo_loss import LigerFusedLinearSimPOFunction

    # (input, weight, target, bias, ignore_index, beta, alpha, label_smoothing, compute_nll_loss, compiled, gamma)
    args = (x["x"], x["weight"], x["target"], None, IGNORE_INDEX, BETA, 1.0, 0.0, True, True, SIMPO_GAMMA)
    return lambda: loss_as(torch.float32, LigerFusedLinearSimPOFunction.apply(*args)[0])


def _paired(slug: str, name: str, fn: Callable[..., torch.Tensor], liger_binder: Callable[[Adapter, Tensors], Bound],
            function: str) -> OperationDef:
    def adapters() -> list[Adapter]:
        return [
            our_baseline(slug, MODULE, fn.__name__, _bind(fn)),
            liger(slug, f"liger-kernel-{slug}", f"liger_kernel.chunked_loss.{name}_loss", function, liger_binder),
            torch_compile(slug, f"{MODULE}.{fn.__name__}", _bind_compiled(fn)),
        ]
    term = {"cpo": cpo_term, "orpo": orpo_term, "simpo": simpo_term}[name]
    return OperationDef(slug, linear_loss_inputs, _paired_reference(term), adapters, grad_inputs=("x", "weight"),
                        regions=REGIONS)


# --- KTO ----------------------------------------------------------------------------------------------

KTO_DEFAULTS = {"beta": 0.1, "ignore_index": -100}
KTO_ARGS = ("x", "weight", "bias", "ref_x", "ref_weight", "ref_bias", "target", "preference_labels", "kl")


def _kto_inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    vocab = shape(workload, "weight")[0]
    ignore_index = int(workload.spec.params.get("ignore_index", KTO_DEFAULTS["ignore_index"]))
    weight = lm_head(workload, "weight", gen, device)
    values = {
        "x": hidden_states(workload, "x", gen, device),
        "weight": weight,
        "bias": randn(workload, "bias", gen, device, scale=0.1),
        "ref_x": hidden_states(workload, "ref_x", gen, device),
        # the reference head is the policy's before the last updates: close to it
        "ref_weight": weight + lm_head(workload, "ref_weight", gen, device) * 0.05,
        "ref_bias": randn(workload, "ref_bias", gen, device, scale=0.1),
        "target": targets(shape(workload, "target"), vocab, gen, device, ignore_index=ignore_index),
        "preference_labels": torch.rand(shape(workload, "preference_labels"), generator=gen, device=device) < 0.5,
        "kl": torch.rand(shape(workload, "kl"), generator=gen, device=device) * 0.5 + 0.01,  # a small positive KL
    }
    return with_params(place(values, workload, device), workload, KTO_DEFAULTS)


def kto_loss(x: Tensors, policy: torch.Tensor, reference: torch.Tensor, beta: float) -> torch.Tensor:
    """Mean over sequences of 1 − sigmoid(±beta · (logp ratio − kl)); ``policy`` / ``reference``: mean logps."""
    ratio = policy - reference.detach()
    sign = torch.where(x["preference_labels"], 1.0, -1.0).to(ratio.dtype)
    return (1 - torch.sigmoid(beta * (ratio - x["kl"].to(ratio.dtype)) * sign)).mean()


def kto_reference(x: Tensors) -> Tensors:
    p = params_of(x)
    ignore_index = int(p["ignore_index"])
    policy = mean_logps(*reference_logps(x["x"], x["weight"], x["target"], ignore_index, x["bias"]))
    with torch.no_grad():
        reference = mean_logps(*reference_logps(x["ref_x"], x["ref_weight"], x["target"], ignore_index, x["ref_bias"]))
    return {"loss": kto_loss(x, policy, reference, p["beta"])}


def torch_kto(x: Tensors, beta: float, ignore_index: int) -> torch.Tensor:
    """KTO on float32 logits of the policy and reference heads (with biases); mean over sequences."""
    policy = mean_logps(*token_logps(at_least_fp32(F.linear(x["x"], x["weight"], x["bias"])), x["target"],
                                     ignore_index))
    with torch.no_grad():
        reference = mean_logps(*token_logps(at_least_fp32(F.linear(x["ref_x"], x["ref_weight"], x["ref_bias"])),
                                            x["target"], ignore_index))
    return kto_loss(x, policy, reference, beta).float()


def _bind_kto(adapter: Adapter, x: Tensors) -> Bound:
    p, args = params_of(x), {name: x[name] for name in KTO_ARGS}
    return lambda: {"loss": torch_kto(args, p["beta"], int(p["ignore_index"]))}


def _bind_kto_compile(adapter: Adapter, x: Tensors) -> Bound:
    p, args = params_of(x), {name: x[name] for name in KTO_ARGS}
    call = compiled(adapter, lambda: torch_kto)
    return lambda: {"loss": call(args, p["beta"], int(p["ignore_index"]))}


def _bind_kto_liger(adapter: Adapter, x: Tensors) -> Bound:
    from liger_kernel.chunked_loss import LigerFusedLinearKTOLoss

    p = params_of(x)
    loss = LigerFusedLinearKTOLoss(ignore_index=int(p["ignore_index"]), beta=p["beta"], use_ref_model=True,
                                   average_log_prob=True)
    return lambda: loss_as(torch.float32, loss(
        x["x"], x["weight"], x["target"], x["bias"], x["preference_labels"], x["ref_x"], x["ref_weight"],
        x["ref_bias"], x["kl"])[0])


def _kto_adapters() -> list[Adapter]:
    slug = "fused-linear-kto-loss"
    return [
        our_baseline(slug, MODULE, "torch_kto", _bind_kto),
        liger(slug, "liger-kernel-fused-linear-kto-loss", "liger_kernel.chunked_loss", "LigerFusedLinearKTOLoss",
              _bind_kto_liger),
        torch_compile(slug, f"{MODULE}.torch_kto", _bind_kto_compile),
    ]


OPERATIONS = [
    _paired("fused-linear-cpo-loss", "cpo", torch_cpo, _bind_liger_cpo, "LigerFusedLinearCPOFunction"),
    _paired("fused-linear-orpo-loss", "orpo", torch_orpo, _bind_liger_orpo, "LigerFusedLinearORPOFunction"),
    _paired("fused-linear-simpo-loss", "simpo", torch_simpo, _bind_liger_simpo, "LigerFusedLinearSimPOFunction"),
    OperationDef("fused-linear-kto-loss", _kto_inputs, kto_reference, _kto_adapters,
                 grad_inputs=("x", "weight", "bias"), regions=REGIONS),
]
