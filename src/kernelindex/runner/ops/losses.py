"""Losses over logits or distributions: cross-entropy, kl-div, jsd, tvd.

Baselines: ``torch.nn.CrossEntropyLoss`` and ``torch.nn.KLDivLoss`` as the Liger benchmarks name them;
jsd and tvd have their baseline only inside Liger's benchmark scripts, so the baseline here is
KernelIndex's own plain-PyTorch function below (written from the operation's semantics).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from kernelindex.domain.manifests import WorkloadCase
from kernelindex.runner.definitions import REGIONS, Adapter, Bound, OperationDef, Tensors
from kernelindex.runner.ops._common import (
    at_least_fp32,
    chunked_cat,
    chunked_sum,
    compiled,
    liger,
    ours_liger_compile,
    place,
    pytorch_baseline,
    randn,
    shape,
    targets,
    torch_compile,
)

IGNORE_INDEX = -100
JSD_BETA = 0.5
MODULE = "kernelindex.runner.ops.losses"


# --- cross-entropy -----------------------------------------------------------------------------------


def _cross_entropy_inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    bt, vocab = shape(workload, "logits")
    values = {
        "logits": randn(workload, "logits", gen, device),
        "target": targets((bt,), vocab, gen, device, ignore_index=IGNORE_INDEX),
    }
    return place(values, workload, device)


def _row_logps(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    return logits.double().log_softmax(-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)


def cross_entropy_reference(x: Tensors) -> Tensors:
    kept = x["target"] != IGNORE_INDEX
    ids = torch.where(kept, x["target"], 0)
    logps = chunked_cat(_row_logps, [x["logits"], ids], row_elements=x["logits"].shape[-1])
    return {"loss": -(logps * kept).sum() / kept.sum()}


def _bind_cross_entropy_baseline(adapter: Adapter, x: Tensors) -> Bound:
    loss = torch.nn.CrossEntropyLoss(ignore_index=IGNORE_INDEX)
    return lambda: {"loss": loss(x["logits"], x["target"])}


def _bind_cross_entropy_compile(adapter: Adapter, x: Tensors) -> Bound:
    fn = compiled(adapter, lambda: torch.nn.CrossEntropyLoss(ignore_index=IGNORE_INDEX))
    return lambda: {"loss": fn(x["logits"], x["target"])}


def _bind_cross_entropy_liger(adapter: Adapter, x: Tensors) -> Bound:
    from liger_kernel.transformers.cross_entropy import LigerCrossEntropyLoss

    loss = LigerCrossEntropyLoss(ignore_index=IGNORE_INDEX)
    return lambda: {"loss": loss(x["logits"], x["target"])}


def _cross_entropy_adapters() -> list[Adapter]:
    slug = "cross-entropy"
    return [
        pytorch_baseline(slug, "pytorch-cross-entropy", "PyTorch nn.CrossEntropyLoss", "torch.nn", "CrossEntropyLoss",
                         _bind_cross_entropy_baseline),
        # Liger writes the logits' gradient into the logits buffer during a forward that requires grad.
        liger(slug, "liger-kernel-cross-entropy", "liger_kernel.transformers.cross_entropy", "LigerCrossEntropyLoss",
              _bind_cross_entropy_liger, in_place=True),
        torch_compile(slug, "torch.nn.CrossEntropyLoss", _bind_cross_entropy_compile),
    ]


# --- kl-div --------------------------------------------------------------------------------------------


def _distribution_logits(workload: WorkloadCase, name: str, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    return randn(workload, name, gen, device, scale=2.0)


def _kl_div_inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    values = {
        "input": _distribution_logits(workload, "input", gen, device).log_softmax(-1),
        "target": _distribution_logits(workload, "target", gen, device).softmax(-1),
    }
    return place(values, workload, device)


def _kl_sum(log_q: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    return F.kl_div(log_q.double(), p.double(), reduction="sum")


def kl_div_reference(x: Tensors) -> Tensors:
    rows, vocab = x["input"].shape
    return {"loss": chunked_sum(_kl_sum, [x["input"], x["target"]], row_elements=vocab) / rows}


def _bind_kl_div_baseline(adapter: Adapter, x: Tensors) -> Bound:
    loss = torch.nn.KLDivLoss(reduction="batchmean")
    return lambda: {"loss": loss(x["input"], x["target"])}


def _bind_kl_div_compile(adapter: Adapter, x: Tensors) -> Bound:
    fn = compiled(adapter, lambda: torch.nn.KLDivLoss(reduction="batchmean"))
    return lambda: {"loss": fn(x["input"], x["target"])}


def _bind_kl_div_liger(adapter: Adapter, x: Tensors) -> Bound:
    from liger_kernel.transformers.kl_div import LigerKLDIVLoss

    loss = LigerKLDIVLoss(reduction="batchmean")
    return lambda: {"loss": loss(x["input"], x["target"])}


def _kl_div_adapters() -> list[Adapter]:
    slug = "kl-div"
    return [
        pytorch_baseline(slug, "pytorch-kl-div", "PyTorch nn.KLDivLoss", "torch.nn", "KLDivLoss",
                         _bind_kl_div_baseline),
        liger(slug, "liger-kernel-kl-div", "liger_kernel.transformers.kl_div", "LigerKLDIVLoss", _bind_kl_div_liger),
        torch_compile(slug, "torch.nn.KLDivLoss", _bind_kl_div_compile),
    ]


# --- jsd ----------------------------------------------------------------------------------------------


def _jsd_inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    values = {name: _distribution_logits(workload, name, gen, device).log_softmax(-1) for name in ("input", "target")}
    return place(values, workload, device)


def generalized_jsd(log_q: torch.Tensor, log_p: torch.Tensor, beta: float = JSD_BETA) -> torch.Tensor:
    """Sum over rows of beta·KL(p‖m) + (1 − beta)·KL(q‖m), m = beta·p + (1 − beta)·q (log-space inputs)."""
    p, q = log_p.exp(), log_q.exp()
    log_m = (beta * p + (1 - beta) * q).log()
    return beta * (p * (log_p - log_m)).sum() + (1 - beta) * (q * (log_q - log_m)).sum()


def _jsd_sum(log_q: torch.Tensor, log_p: torch.Tensor) -> torch.Tensor:
    return generalized_jsd(log_q.double(), log_p.double())


def jsd_reference(x: Tensors) -> Tensors:
    rows, vocab = x["input"].shape
    return {"loss": chunked_sum(_jsd_sum, [x["input"], x["target"]], row_elements=vocab) / rows}


def torch_jsd(log_q: torch.Tensor, log_p: torch.Tensor) -> torch.Tensor:
    """Generalized JSD (beta 0.5) of student log-probs ``log_q`` against teacher log-probs ``log_p``,
    computed in float32 and returned in the inputs' dtype, mean over rows."""
    return (generalized_jsd(at_least_fp32(log_q), at_least_fp32(log_p)) / log_q.shape[0]).to(log_q.dtype)


def _bind_jsd_baseline(adapter: Adapter, x: Tensors) -> Bound:
    return lambda: {"loss": torch_jsd(x["input"], x["target"])}


def _bind_jsd_compile(adapter: Adapter, x: Tensors) -> Bound:
    fn = compiled(adapter, lambda: torch_jsd)
    return lambda: {"loss": fn(x["input"], x["target"])}


def _bind_jsd_liger(adapter: Adapter, x: Tensors) -> Bound:
    from liger_kernel.transformers.jsd import LigerJSD

    loss = LigerJSD(beta=JSD_BETA)
    return lambda: {"loss": loss(x["input"], x["target"])}


def _jsd_adapters() -> list[Adapter]:
    return ours_liger_compile("jsd", MODULE, "torch_jsd", _bind_jsd_baseline,
                              ("liger_kernel.transformers.jsd", "LigerJSD"), _bind_jsd_liger, _bind_jsd_compile)


# --- tvd ----------------------------------------------------------------------------------------------


def _tvd_inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    values = {name: _distribution_logits(workload, name, gen, device).softmax(-1) for name in ("p", "q")}
    return place(values, workload, device)


def _tvd_sum(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    return (p.double() - q.double()).abs().sum() / 2


def tvd_reference(x: Tensors) -> Tensors:
    rows, vocab = x["p"].shape
    return {"loss": chunked_sum(_tvd_sum, [x["p"], x["q"]], row_elements=vocab) / rows}


def torch_tvd(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Total variation distance, sum(|p − q|) / 2 divided by the rows (batchmean)."""
    return (p - q).abs().sum() / 2 / p.shape[0]


def _bind_tvd_baseline(adapter: Adapter, x: Tensors) -> Bound:
    return lambda: {"loss": torch_tvd(x["p"], x["q"])}


def _bind_tvd_compile(adapter: Adapter, x: Tensors) -> Bound:
    fn = compiled(adapter, lambda: torch_tvd)
    return lambda: {"loss": fn(x["p"], x["q"])}


def _bind_tvd_liger(adapter: Adapter, x: Tensors) -> Bound:
    from liger_kernel.transformers.tvd import LigerTVDLoss

    loss = LigerTVDLoss(reduction="batchmean")
    return lambda: {"loss": loss(x["p"], x["q"])}


def _tvd_adapters() -> list[Adapter]:
    return ours_liger_compile("tvd", MODULE, "torch_tvd", _bind_tvd_baseline,
                              ("liger_kernel.transformers.tvd", "LigerTVDLoss"), _bind_tvd_liger, _bind_tvd_compile)


OPERATIONS = [
    OperationDef("cross-entropy", _cross_entropy_inputs, cross_entropy_reference, _cross_entropy_adapters,
                 grad_inputs=("logits",), regions=REGIONS, overwrites=("logits",)),
    OperationDef("kl-div", _kl_div_inputs, kl_div_reference, _kl_div_adapters, grad_inputs=("input",),
                 regions=REGIONS),
    OperationDef("jsd", _jsd_inputs, jsd_reference, _jsd_adapters, grad_inputs=("input",), regions=REGIONS),
    OperationDef("tvd", _tvd_inputs, tvd_reference, _tvd_adapters, grad_inputs=("p",), regions=REGIONS),
]
