"""embedding: y[b, s, :] = weight[input_ids[b, s], :]; the weight's gradient in backward."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from kernelindex.domain.manifests import WorkloadCase
from kernelindex.runner.adapters import compiled, module_call
from kernelindex.runner.definitions import REGIONS, Adapter, Bound, OperationDef, Tensors
from kernelindex.runner.inputs import place, randn, tensor_decls


def reference(inputs: Tensors) -> Tensors:
    return {"y": inputs["weight"].double()[inputs["input_ids"]]}


def make_inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    decls = tensor_decls(workload)
    vocab = decls["weight"].shape[0]
    ids = torch.randint(0, vocab, tuple(decls["input_ids"].shape), generator=gen, device=device)
    return {"input_ids": place(ids, decls["input_ids"], device), "weight": randn(decls["weight"], gen, device)}


def _bind_baseline(adapter: Adapter, x: Tensors) -> Bound:
    vocab, hidden = x["weight"].shape
    with torch.device("meta"):  # skip the constructor's random init; the weight is the input
        module = torch.nn.Embedding(vocab, hidden)
    ids, weight = x["input_ids"], x["weight"]
    return lambda: {"y": module_call(module, {"weight": weight}, ids)}


def _embedding_forward() -> Callable[..., Any]:
    # Exactly what torch.nn.Embedding.forward runs with its default arguments.
    return lambda ids, weight: torch.nn.functional.embedding(ids, weight)


def _bind_compile(adapter: Adapter, x: Tensors) -> Bound:
    fn = compiled(adapter, _embedding_forward)
    ids, weight = x["input_ids"], x["weight"]
    return lambda: {"y": fn(ids, weight)}


def _bind_liger(adapter: Adapter, x: Tensors) -> Bound:
    from liger_kernel.transformers.experimental.embedding import LigerEmbedding

    vocab, hidden = x["weight"].shape
    with torch.device("meta"):
        module = LigerEmbedding(vocab, hidden)
    ids, weight = x["input_ids"], x["weight"]
    return lambda: {"y": module_call(module, {"weight": weight}, ids)}


def adapters() -> list[Adapter]:
    liger = "liger_kernel.transformers.experimental.embedding"
    return [
        Adapter("baseline", "embedding", "pytorch-embedding", "PyTorch nn.Embedding", "pytorch", "python",
                "torch.nn", "Embedding", ("torch",), ("torch.nn",), _bind_baseline, role="baseline"),
        Adapter("liger", "embedding", "liger-kernel-embedding", "Liger", "liger-kernel", "triton", liger,
                "LigerEmbedding", ("liger-kernel", "torch", "triton"), (liger,), _bind_liger),
        Adapter("torch-compile", "embedding", "torch-compile-embedding", "torch.compile", "pytorch", "python",
                "torch", "compile(torch.nn.Embedding)", ("torch", "triton"), ("torch._inductor",), _bind_compile),
    ]


OPERATIONS = [OperationDef("embedding", make_inputs, reference, adapters, grad_inputs=("weight",), regions=REGIONS,
                           index_inputs=("input_ids",))]
