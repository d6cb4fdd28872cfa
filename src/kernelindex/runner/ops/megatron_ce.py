"""megatron-cross-entropy: Megatron's vocab-parallel cross-entropy at tensor-parallel size 1.

The Liger benchmark's baseline is Megatron-LM's unfused ``vocab_parallel_cross_entropy``; its fused
``fused_vocab_parallel_cross_entropy`` competes. Both need the ``megatron-core`` package and a
process group: the runner makes a one-rank group (NCCL on the GPU), as tensor-parallel size 1 is.
Where ``megatron-core`` does not import, the baseline is KernelIndex's own plain-PyTorch per-token
cross-entropy, and its description says why Megatron's is absent.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import torch
import torch.nn.functional as F

from kernelindex.domain.manifests import WorkloadCase
from kernelindex.runner.definitions import REGIONS, Adapter, Bound, OperationDef, Tensors
from kernelindex.runner.ops._common import (
    bind_compiled_loss,
    bind_liger_loss,
    bind_loss,
    compiled,
    liger,
    our_baseline,
    place,
    randn,
    shape,
    targets,
    torch_compile,
)

SLUG = "megatron-cross-entropy"
MODULE = "kernelindex.runner.ops.megatron_ce"
MEGATRON = ("megatron-core", "torch")
UNFUSED = "megatron.core.tensor_parallel.cross_entropy"
FUSED = "megatron.core.fusions.fused_cross_entropy"


def _inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    seq, batch, vocab = shape(workload, "logits")
    values = {"logits": randn(workload, "logits", gen, device), "target": targets((seq, batch), vocab, gen, device)}
    return place(values, workload, device)


def reference(x: Tensors) -> Tensors:
    logits = x["logits"].double()
    loss = F.cross_entropy(logits.flatten(0, 1), x["target"].flatten(), reduction="none")
    return {"loss": loss.view(x["target"].shape)}


def torch_per_token_cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Per-token cross-entropy of [seq, batch, vocab] logits, computed and returned in float32."""
    loss = F.cross_entropy(logits.float().flatten(0, 1), target.flatten(), reduction="none")
    return loss.view(target.shape)


def _one_rank_group() -> Any:
    import torch.distributed as dist

    if not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)
    return dist.group.WORLD


def _bind_megatron_unfused(adapter: Adapter, x: Tensors) -> Bound:
    from megatron.core.tensor_parallel.cross_entropy import vocab_parallel_cross_entropy

    group = _one_rank_group()
    return lambda: {"loss": vocab_parallel_cross_entropy(x["logits"], x["target"], 0.0, group)}


def _bind_megatron_unfused_compile(adapter: Adapter, x: Tensors) -> Bound:
    from megatron.core.tensor_parallel.cross_entropy import vocab_parallel_cross_entropy

    group = _one_rank_group()
    fn = compiled(adapter, lambda: vocab_parallel_cross_entropy)
    return lambda: {"loss": fn(x["logits"], x["target"], 0.0, group)}


def _bind_megatron_fused(adapter: Adapter, x: Tensors) -> Bound:
    from megatron.core.fusions.fused_cross_entropy import fused_vocab_parallel_cross_entropy

    group = _one_rank_group()
    return lambda: {"loss": fused_vocab_parallel_cross_entropy(x["logits"], x["target"], group)}


def megatron_missing() -> str | None:
    """Why Megatron's cross-entropy cannot run here, or None."""
    if importlib.util.find_spec("megatron") is None or importlib.util.find_spec("megatron.core") is None:
        return "Megatron-LM's baseline package megatron-core is not installed on the runner"
    try:
        importlib.import_module(UNFUSED)
        importlib.import_module(FUSED)
    except Exception as exc:  # noqa: BLE001 - any import failure means the baseline cannot run
        problem = f"{type(exc).__name__}: {exc}"
        return f"Megatron-LM's baseline package megatron-core does not import on the runner ({problem})"
    return None


def _megatron_adapters() -> list[Adapter]:
    return [
        Adapter("baseline", SLUG, "megatron-lm-vocab-parallel-cross-entropy", "Megatron unfused", "megatron-lm",
                "python", UNFUSED, "vocab_parallel_cross_entropy", MEGATRON, (UNFUSED,), _bind_megatron_unfused,
                role="baseline"),
        Adapter("megatron-fused", SLUG, "megatron-lm-fused-vocab-parallel-cross-entropy", "Megatron fused",
                "megatron-lm", "python", FUSED, "fused_vocab_parallel_cross_entropy", MEGATRON, (FUSED,),
                _bind_megatron_fused),
        torch_compile(SLUG, f"{UNFUSED}.vocab_parallel_cross_entropy", _bind_megatron_unfused_compile),
    ]


def adapters() -> list[Adapter]:
    """Megatron's baseline where it imports, else KernelIndex's torch baseline; then Liger.

    Liger 0.8.5's vocab-parallel kernel keeps the gradient in its own buffer (the logits stay intact)."""
    liger_adapter = liger(SLUG, "liger-kernel-megatron-cross-entropy", "liger_kernel.megatron",
                          "LigerMegatronCrossEntropy", bind_liger_loss("logits", "target"))
    missing = megatron_missing()
    if missing is None:
        unfused, fused, compile_unfused = _megatron_adapters()
        return [unfused, fused, liger_adapter, compile_unfused]
    why = f"The source's baseline, Megatron-LM's vocab_parallel_cross_entropy, could not run: {missing}"
    ours = bind_loss(lambda: torch_per_token_cross_entropy, "logits", "target")
    ours_compiled = bind_compiled_loss(lambda: torch_per_token_cross_entropy, "logits", "target")
    return [our_baseline(SLUG, MODULE, "torch_per_token_cross_entropy", ours, why=why), liger_adapter,
            torch_compile(SLUG, f"{MODULE}.torch_per_token_cross_entropy", ours_compiled)]


# The spec lets an implementation overwrite the logits with their gradient (Megatron's fused path does).
OPERATIONS = [OperationDef(SLUG, _inputs, reference, adapters, grad_inputs=("logits",), regions=REGIONS,
                           overwrites=("logits",))]
