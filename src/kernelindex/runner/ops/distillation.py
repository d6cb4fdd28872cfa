"""Chunked distillation losses: distill-cosine-loss and distill-jsd-loss.

A student LM head (hidden // 2) and a teacher LM head (hidden) over the same tokens; the loss is
``weight_hard_loss`` · cross-entropy of the student against the labels plus ``weight_soft_loss`` · a
soft term between the two distributions (1 − cosine similarity of the logits, or generalized JSD with
beta 0.5 of their log-softmax), the soft term averaged over the tokens. The weights and ``ignore_index``
are workload parameters. The Liger benchmark's baselines live in the script (``TorchCosineSimilarityLoss``,
``TorchJSDLoss``, from Liger's tests), so the baseline here is KernelIndex's own plain PyTorch.

Liger is called with beta 1.0 for the cosine term: the operation's soft term is (1 − cosine similarity),
while Liger's function scales it by its ``beta`` argument (0.5 unless given).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from kernelindex.domain.manifests import WorkloadCase
from kernelindex.runner.definitions import REGIONS, Adapter, Bound, OperationDef, Tensors
from kernelindex.runner.ops._common import (
    at_least_fp32,
    chunked_sum,
    compiled,
    loss_as,
    ours_liger_compile,
    params_of,
    place,
    shape,
    targets,
    with_params,
)
from kernelindex.runner.ops.fused_linear import hidden_states, lm_head
from kernelindex.runner.ops.losses import JSD_BETA, generalized_jsd

MODULE = "kernelindex.runner.ops.distillation"
DEFAULTS = {"weight_hard_loss": 0.5, "weight_soft_loss": 0.5, "ignore_index": -100}
HEADS = ("student_x", "student_weight", "teacher_x", "teacher_weight")
Soft = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # soft term between student and teacher logits
Binder = Callable[[Adapter, Tensors], Bound]


def _inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    values = {name: (lm_head if name.endswith("weight") else hidden_states)(workload, name, gen, device)
              for name in HEADS}
    # Every token is labelled, as in the benchmark: the soft term then averages over the same rows everywhere.
    values["target"] = targets(shape(workload, "target"), shape(workload, "student_weight")[0], gen, device)
    return with_params(place(values, workload, device), workload, DEFAULTS)


def _cosine_soft(s: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """Σ over rows of (1 − cosine similarity of the logits)."""
    return (1 - F.cosine_similarity(s, t, dim=-1)).sum()


def _jsd_soft(s: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """Σ over rows of the generalized JSD (beta 0.5) of the two distributions."""
    return generalized_jsd(s.log_softmax(-1), t.log_softmax(-1), JSD_BETA)


def _distill(s: torch.Tensor, t: torch.Tensor, target: torch.Tensor, soft: Soft, p: dict[str, Any]) -> torch.Tensor:
    hard = F.cross_entropy(s, target, ignore_index=int(p["ignore_index"]))
    return p["weight_hard_loss"] * hard + p["weight_soft_loss"] * soft(s, t) / s.shape[0]


def _reference(soft: Soft) -> Callable[[Tensors], Tensors]:
    def sums(student_x: torch.Tensor, teacher_x: torch.Tensor, ids: torch.Tensor, kept: torch.Tensor,
             student_weight: torch.Tensor, teacher_weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        s, t = student_x.double() @ student_weight.T, teacher_x.double() @ teacher_weight.T
        nll = -(s.log_softmax(-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1) * kept).sum()
        return nll, soft(s, t)

    def reference(x: Tensors) -> Tensors:
        p = params_of(x)
        kept = x["target"] != int(p["ignore_index"])
        rows, vocab = x["target"].shape[0], x["student_weight"].shape[0]
        nll, soft_sum = chunked_sum(
            sums, [x["student_x"], x["teacher_x"], torch.where(kept, x["target"], 0), kept],
            [x["student_weight"].double(), x["teacher_weight"].double()], row_elements=vocab)
        return {"loss": p["weight_hard_loss"] * nll / kept.sum() + p["weight_soft_loss"] * soft_sum / rows}
    return reference


def torch_distill_cosine(student_x: torch.Tensor, student_weight: torch.Tensor, teacher_x: torch.Tensor,
                         teacher_weight: torch.Tensor, target: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
    """Student and teacher ``F.linear`` (float32 logits), hard CE plus (1 − cosine similarity), float32 loss."""
    s, t = at_least_fp32(F.linear(student_x, student_weight)), at_least_fp32(F.linear(teacher_x, teacher_weight))
    return _distill(s, t, target, _cosine_soft, p).float()


def torch_distill_jsd(student_x: torch.Tensor, student_weight: torch.Tensor, teacher_x: torch.Tensor,
                      teacher_weight: torch.Tensor, target: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
    """Student and teacher ``F.linear`` (float32 logits), hard CE plus generalized JSD (beta 0.5), float32 loss."""
    s, t = at_least_fp32(F.linear(student_x, student_weight)), at_least_fp32(F.linear(teacher_x, teacher_weight))
    return _distill(s, t, target, _jsd_soft, p).float()


def _args(x: Tensors) -> tuple[torch.Tensor, ...]:
    return (*(x[name] for name in HEADS), x["target"])


def _bind_ours(fn: Callable[..., torch.Tensor]) -> Binder:
    def bind(adapter: Adapter, x: Tensors) -> Bound:
        p = params_of(x)
        return lambda: {"loss": fn(*_args(x), p)}
    return bind


def _bind_compile(fn: Callable[..., torch.Tensor]) -> Binder:
    def bind(adapter: Adapter, x: Tensors) -> Bound:
        p = params_of(x)
        call = compiled(adapter, lambda: fn)
        return lambda: {"loss": call(*_args(x), p)}
    return bind


def _bind_liger_cosine(adapter: Adapter, x: Tensors) -> Bound:
    from liger_kernel.chunked_loss.cosine_similarity_loss import LigerFusedLinearCosineSimilarityFunction

    p = params_of(x)
    args = (*_args(x), None, None, p["weight_hard_loss"], p["weight_soft_loss"], 1.0, int(p["ignore_index"]))
    return lambda: loss_as(torch.float32, LigerFusedLinearCosineSimilarityFunction.apply(*args))


def _bind_liger_jsd(adapter: Adapter, x: Tensors) -> Bound:
    from liger_kernel.chunked_loss.jsd_loss import LigerFusedLinearJSDFunction

    p = params_of(x)
    args = (*_args(x), None, None, p["weight_hard_loss"], p["weight_soft_loss"], JSD_BETA, int(p["ignore_index"]))
    return lambda: loss_as(torch.float32, LigerFusedLinearJSDFunction.apply(*args))


def _cosine_adapters() -> list[Adapter]:
    return ours_liger_compile(
        "distill-cosine-loss", MODULE, "torch_distill_cosine", _bind_ours(torch_distill_cosine),
        ("liger_kernel.chunked_loss.cosine_similarity_loss", "LigerFusedLinearCosineSimilarityFunction"),
        _bind_liger_cosine, _bind_compile(torch_distill_cosine))


def _jsd_adapters() -> list[Adapter]:
    return ours_liger_compile(
        "distill-jsd-loss", MODULE, "torch_distill_jsd", _bind_ours(torch_distill_jsd),
        ("liger_kernel.chunked_loss.jsd_loss", "LigerFusedLinearJSDFunction"),
        _bind_liger_jsd, _bind_compile(torch_distill_jsd))


GRADS = ("student_x", "student_weight")
OPERATIONS = [
    OperationDef("distill-cosine-loss", _inputs, _reference(_cosine_soft), _cosine_adapters, grad_inputs=GRADS,
                 regions=REGIONS),
    OperationDef("distill-jsd-loss", _inputs, _reference(_jsd_soft), _jsd_adapters, grad_inputs=GRADS,
                 regions=REGIONS),
]
