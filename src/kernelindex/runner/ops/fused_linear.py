"""LM-head projection fused with a loss: fused-linear-cross-entropy and fused-linear-jsd.

Both baselines live only inside Liger's benchmark scripts (``TorchLMHeadCE``, ``TorchLMHeadJSD``), so
the baseline here is KernelIndex's own plain PyTorch: ``F.linear`` then the loss on float32 logits.
Liger's fused kernels return a float32 loss; the binder casts it to the declared dtype.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from kernelindex.domain.manifests import WorkloadCase
from kernelindex.runner.definitions import REGIONS, Adapter, Bound, OperationDef, Tensors
from kernelindex.runner.ops._common import (
    at_least_fp32,
    bind_compiled_loss,
    bind_loss,
    chunked_sum,
    compiled,
    loss_as,
    ours_liger_compile,
    place,
    randn,
    reference_token_logps,
    shape,
    targets,
)
from kernelindex.runner.ops.losses import IGNORE_INDEX, JSD_BETA, generalized_jsd

MODULE = "kernelindex.runner.ops.fused_linear"
FLCE_ARGS = ("x", "weight", "target")


def hidden_states(workload: WorkloadCase, name: str, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    return randn(workload, name, gen, device)


def lm_head(workload: WorkloadCase, name: str, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """An LM-head weight scaled like a trained one (logits of order one for unit-variance hidden states)."""
    hidden = shape(workload, name)[-1]
    return randn(workload, name, gen, device, scale=hidden**-0.5)


# --- fused-linear-cross-entropy ------------------------------------------------------------------------


def linear_loss_inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    """Hidden states ``x``, an LM head ``weight`` and ``target`` token ids, some of them ignored."""
    vocab = shape(workload, "weight")[0]
    values = {
        "x": hidden_states(workload, "x", gen, device),
        "weight": lm_head(workload, "weight", gen, device),
        "target": targets(shape(workload, "target"), vocab, gen, device, ignore_index=IGNORE_INDEX),
    }
    return place(values, workload, device)


def flce_reference(x: Tensors) -> Tensors:
    kept = x["target"] != IGNORE_INDEX
    logps = reference_token_logps(x["x"], x["weight"], torch.where(kept, x["target"], 0))
    return {"loss": -(logps * kept).sum() / kept.sum()}


def torch_linear_cross_entropy(x: torch.Tensor, weight: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """``F.linear`` then mean cross-entropy (ignore_index -100) on float32 logits, in the inputs' dtype."""
    logits = at_least_fp32(F.linear(x, weight))
    return F.cross_entropy(logits, target, ignore_index=IGNORE_INDEX).to(x.dtype)


def _bind_flce_liger(adapter: Adapter, x: Tensors) -> Bound:
    from liger_kernel.transformers.fused_linear_cross_entropy import LigerFusedLinearCrossEntropyLoss

    loss = LigerFusedLinearCrossEntropyLoss(ignore_index=IGNORE_INDEX)
    return lambda: loss_as(x["x"].dtype, loss(x["weight"], x["x"], x["target"]))


def _flce_adapters() -> list[Adapter]:
    return ours_liger_compile(
        "fused-linear-cross-entropy", MODULE, "torch_linear_cross_entropy",
        bind_loss(lambda: torch_linear_cross_entropy, *FLCE_ARGS),
        ("liger_kernel.transformers.fused_linear_cross_entropy", "LigerFusedLinearCrossEntropyLoss"),
        _bind_flce_liger, bind_compiled_loss(lambda: torch_linear_cross_entropy, *FLCE_ARGS))


# --- fused-linear-jsd ----------------------------------------------------------------------------------


def _fljsd_inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    values = {
        "student_x": hidden_states(workload, "student_x", gen, device),
        "student_weight": lm_head(workload, "student_weight", gen, device),
        "teacher_x": hidden_states(workload, "teacher_x", gen, device),
        "teacher_weight": lm_head(workload, "teacher_weight", gen, device),
    }
    return place(values, workload, device)


def _fljsd_sum(student_x: torch.Tensor, teacher_x: torch.Tensor, student_weight: torch.Tensor,
               teacher_weight: torch.Tensor) -> torch.Tensor:
    log_q = (student_x.double() @ student_weight.T).log_softmax(-1)
    log_p = (teacher_x.double() @ teacher_weight.T).log_softmax(-1)
    return generalized_jsd(log_q, log_p)


def fljsd_reference(x: Tensors) -> Tensors:
    rows, vocab = x["student_x"].shape[0], x["student_weight"].shape[0]
    total = chunked_sum(_fljsd_sum, [x["student_x"], x["teacher_x"]],
                        [x["student_weight"].double(), x["teacher_weight"].double()], row_elements=vocab)
    return {"loss": total / rows}


def torch_linear_jsd(
    student_x: torch.Tensor, student_weight: torch.Tensor, teacher_x: torch.Tensor, teacher_weight: torch.Tensor,
) -> torch.Tensor:
    """Student and teacher ``F.linear``, log-softmax in float32, generalized JSD (beta 0.5), mean over rows."""
    log_q = at_least_fp32(F.linear(student_x, student_weight)).log_softmax(-1)
    log_p = at_least_fp32(F.linear(teacher_x, teacher_weight)).log_softmax(-1)
    return (generalized_jsd(log_q, log_p, JSD_BETA) / log_q.shape[0]).to(student_x.dtype)


def _fljsd_args(x: Tensors) -> tuple[torch.Tensor, ...]:
    return x["student_x"], x["student_weight"], x["teacher_x"], x["teacher_weight"]


def _bind_fljsd_baseline(adapter: Adapter, x: Tensors) -> Bound:
    return lambda: {"loss": torch_linear_jsd(*_fljsd_args(x))}


def _bind_fljsd_compile(adapter: Adapter, x: Tensors) -> Bound:
    fn = compiled(adapter, lambda: torch_linear_jsd)
    return lambda: {"loss": fn(*_fljsd_args(x))}


def _bind_fljsd_liger(adapter: Adapter, x: Tensors) -> Bound:
    from liger_kernel.transformers.fused_linear_jsd import LigerFusedLinearJSD

    loss = LigerFusedLinearJSD(jsd_beta=JSD_BETA, temperature=1.0)
    return lambda: loss_as(x["student_x"].dtype, loss(*_fljsd_args(x), None))


def _fljsd_adapters() -> list[Adapter]:
    return ours_liger_compile(
        "fused-linear-jsd", MODULE, "torch_linear_jsd", _bind_fljsd_baseline,
        ("liger_kernel.transformers.fused_linear_jsd", "LigerFusedLinearJSD"), _bind_fljsd_liger, _bind_fljsd_compile)


OPERATIONS = [
    OperationDef("fused-linear-cross-entropy", linear_loss_inputs, flce_reference, _flce_adapters,
                 grad_inputs=("x", "weight"), regions=REGIONS),
    OperationDef("fused-linear-jsd", _fljsd_inputs, fljsd_reference, _fljsd_adapters,
                 grad_inputs=("student_x", "student_weight"), regions=REGIONS),
]
