"""Losses over logits or distributions: cross-entropy, kl-div, jsd, tvd.

Baselines: ``torch.nn.CrossEntropyLoss`` and ``torch.nn.KLDivLoss`` as the Liger benchmarks name them;
jsd and tvd have their baseline only inside Liger's benchmark scripts, so the baseline here is
KernelIndex's own plain-PyTorch function below (written from the operation's semantics).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from kernelindex.domain.manifests import WorkloadCase
from kernelindex.runner.definitions import REGIONS, Adapter, OperationDef, Tensors
from kernelindex.runner.ops._common import (
    at_least_fp32,
    bind_compiled_loss,
    bind_liger_loss,
    bind_loss,
    chunked_cat,
    chunked_sum,
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


def _nn_loss_adapters(slug: str, nn_symbol: str, liger_at: tuple[str, str], names: tuple[str, ...],
                      options: dict[str, Any], *, in_place: bool = False) -> list[Adapter]:
    """A loss whose baseline is ``torch.nn.<nn_symbol>(**options)`` and whose Liger module takes the same options:
    the baseline, Liger's ``liger_at`` (module, symbol) and torch.compile of the baseline, called on ``names``."""
    def make() -> torch.nn.Module:
        return getattr(torch.nn, nn_symbol)(**options)

    return [
        pytorch_baseline(slug, f"pytorch-{slug}", f"PyTorch nn.{nn_symbol}", "torch.nn", nn_symbol,
                         bind_loss(make, *names)),
        liger(slug, f"liger-kernel-{slug}", *liger_at, bind_liger_loss(*names, **options), in_place=in_place),
        torch_compile(slug, f"torch.nn.{nn_symbol}", bind_compiled_loss(make, *names)),
    ]


def _cross_entropy_adapters() -> list[Adapter]:
    # Liger writes the logits' gradient into the logits buffer during a forward that requires grad.
    return _nn_loss_adapters("cross-entropy", "CrossEntropyLoss",
                             ("liger_kernel.transformers.cross_entropy", "LigerCrossEntropyLoss"), ("logits", "target"),
                             {"ignore_index": IGNORE_INDEX}, in_place=True)


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


def _kl_div_adapters() -> list[Adapter]:
    return _nn_loss_adapters("kl-div", "KLDivLoss", ("liger_kernel.transformers.kl_div", "LigerKLDIVLoss"),
                             ("input", "target"), {"reduction": "batchmean"})


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


JSD_ARGS = ("input", "target")


def _jsd_adapters() -> list[Adapter]:
    return ours_liger_compile("jsd", MODULE, "torch_jsd", bind_loss(lambda: torch_jsd, *JSD_ARGS),
                              ("liger_kernel.transformers.jsd", "LigerJSD"), bind_liger_loss(*JSD_ARGS, beta=JSD_BETA),
                              bind_compiled_loss(lambda: torch_jsd, *JSD_ARGS))


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


TVD_ARGS = ("p", "q")


def _tvd_adapters() -> list[Adapter]:
    return ours_liger_compile("tvd", MODULE, "torch_tvd", bind_loss(lambda: torch_tvd, *TVD_ARGS),
                              ("liger_kernel.transformers.tvd", "LigerTVDLoss"),
                              bind_liger_loss(*TVD_ARGS, reduction="batchmean"),
                              bind_compiled_loss(lambda: torch_tvd, *TVD_ARGS))


OPERATIONS = [
    OperationDef("cross-entropy", _cross_entropy_inputs, cross_entropy_reference, _cross_entropy_adapters,
                 grad_inputs=("logits",), regions=REGIONS, overwrites=("logits",)),
    OperationDef("kl-div", _kl_div_inputs, kl_div_reference, _kl_div_adapters, grad_inputs=("input",),
                 regions=REGIONS),
    OperationDef("jsd", _jsd_inputs, jsd_reference, _jsd_adapters, grad_inputs=("input",), regions=REGIONS),
    OperationDef("tvd", _tvd_inputs, tvd_reference, _tvd_adapters, grad_inputs=("p",), regions=REGIONS),
]
