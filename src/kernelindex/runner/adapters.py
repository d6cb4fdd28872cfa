"""Adapters: how the runner calls each implementation, and what it needs installed.

An adapter declares the packages its call needs (pip distribution names); their versions come
from the environment (``importlib.metadata``) and become the pinned install of the implementation
revision. A missing package makes the adapter unavailable with a message, never a crash. Each
adapter declares whether it writes its outputs in place; correctness checks that declaration.

Keys used on the command line: ``baseline`` (the operation's baseline: Transformers'
``apply_rotary_pos_emb`` for rope, ``torch.nn.Embedding`` for embedding), ``liger`` and
``torch-compile`` (``torch.compile`` of the baseline).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from kernelindex.runner.correctness import Bound, Tensors


@dataclass
class Adapter:
    key: str  # baseline | liger | torch-compile
    operation: str  # operation slug
    line: str  # implementation line slug (matches the catalog's lines where one exists)
    title: str
    project: str  # registry project slug
    language: str
    module: str
    symbol: str
    packages: tuple[str, ...]  # pip distributions the call needs, the primary one first
    modules: tuple[str, ...]  # modules that must import
    binder: Callable[[Adapter, Tensors], Bound]
    in_place: bool = False
    role: str = "candidate"
    state: dict[str, Any] = field(default_factory=dict)

    def missing(self) -> str | None:
        """Why this adapter cannot run here, or None."""
        for dist in self.packages:
            try:
                importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                return f"{self.title}: package {dist!r} is not installed (pip install {dist})"
        for module in self.modules:
            try:
                importlib.import_module(module)
            except Exception as exc:  # noqa: BLE001 - report any import failure as unavailability
                return f"{self.title}: cannot import {module} ({type(exc).__name__}: {exc})"
        return None

    def versions(self) -> dict[str, str]:
        return {dist: importlib.metadata.version(dist) for dist in self.packages}

    @property
    def version(self) -> str:
        return importlib.metadata.version(self.packages[0])

    def start_case(self) -> None:
        """Forget per-case state (compiled functions) before a new workload case."""
        self.state.clear()

    def bind(self, inputs: Tensors) -> Bound:
        call = self.binder(self, inputs)

        def run() -> Tensors:
            with torch.no_grad():
                return call()

        return run


# --- rope ----------------------------------------------------------------------------------------


def _hf_rope() -> Callable[..., Any]:
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    return apply_rotary_pos_emb


def _bind_rope_baseline(adapter: Adapter, x: Tensors) -> Bound:
    fn = _hf_rope()

    def call() -> Tensors:
        q_out, k_out = fn(x["q"], x["k"], x["cos"], x["sin"])
        return {"q_out": q_out, "k_out": k_out}

    return call


def _compiled(adapter: Adapter, make: Callable[[], Callable[..., Any]]) -> Callable[..., Any]:
    if "compiled" not in adapter.state:
        import torch._dynamo

        torch._dynamo.reset()  # one compilation per case; never hit the recompile limit
        adapter.state["compiled"] = torch.compile(make(), dynamic=False)
    return adapter.state["compiled"]


def _bind_rope_compile(adapter: Adapter, x: Tensors) -> Bound:
    fn = _compiled(adapter, _hf_rope)

    def call() -> Tensors:
        q_out, k_out = fn(x["q"], x["k"], x["cos"], x["sin"])
        return {"q_out": q_out, "k_out": k_out}

    return call


def _bind_rope_liger(adapter: Adapter, x: Tensors) -> Bound:
    from liger_kernel.transformers.rope import liger_rotary_pos_emb

    def call() -> Tensors:
        q_out, k_out = liger_rotary_pos_emb(x["q"], x["k"], x["cos"], x["sin"])
        return {"q_out": q_out, "k_out": k_out}

    return call


# --- embedding -----------------------------------------------------------------------------------


def _bind_embedding_baseline(adapter: Adapter, x: Tensors) -> Bound:
    module = torch.nn.Embedding.from_pretrained(x["weight"], freeze=True)
    ids = x["input_ids"]
    return lambda: {"y": module(ids)}


def _embedding_forward() -> Callable[..., Any]:
    # Exactly what torch.nn.Embedding.forward runs with its default arguments.
    return lambda ids, weight: torch.nn.functional.embedding(ids, weight)


def _bind_embedding_compile(adapter: Adapter, x: Tensors) -> Bound:
    fn = _compiled(adapter, _embedding_forward)
    ids, weight = x["input_ids"], x["weight"]
    return lambda: {"y": fn(ids, weight)}


def _bind_embedding_liger(adapter: Adapter, x: Tensors) -> Bound:
    from liger_kernel.transformers.experimental.embedding import LigerEmbedding

    vocab, hidden = x["weight"].shape
    with torch.device("meta"):  # skip the constructor's random init; the weight is the input
        module = LigerEmbedding(vocab, hidden)
    module.weight = torch.nn.Parameter(x["weight"], requires_grad=False)
    ids = x["input_ids"]
    return lambda: {"y": module(ids)}


def adapters_for(operation: str) -> list[Adapter]:
    """Every adapter the runner knows for ``operation``, baseline first."""
    if operation == "rope":
        return [
            Adapter("baseline", "rope", "transformers-rope", "Transformers", "transformers", "python",
                    "transformers.models.llama.modeling_llama", "apply_rotary_pos_emb",
                    ("transformers", "torch"), ("transformers.models.llama.modeling_llama",),
                    _bind_rope_baseline, role="baseline"),
            Adapter("liger", "rope", "liger-kernel-rope", "Liger", "liger-kernel", "triton",
                    "liger_kernel.transformers.rope", "liger_rotary_pos_emb",
                    ("liger-kernel", "torch", "triton"), ("liger_kernel.transformers.rope",),
                    _bind_rope_liger, in_place=True),
            Adapter("torch-compile", "rope", "torch-compile-rope", "torch.compile", "pytorch", "python", "torch",
                    "compile(transformers.models.llama.modeling_llama.apply_rotary_pos_emb)",
                    ("torch", "transformers", "triton"), ("transformers.models.llama.modeling_llama",),
                    _bind_rope_compile),
        ]
    if operation == "embedding":
        return [
            Adapter("baseline", "embedding", "pytorch-embedding", "PyTorch nn.Embedding", "pytorch", "python",
                    "torch.nn", "Embedding", ("torch",), ("torch.nn",), _bind_embedding_baseline,
                    role="baseline"),
            Adapter("liger", "embedding", "liger-kernel-embedding", "Liger", "liger-kernel", "triton",
                    "liger_kernel.transformers.experimental.embedding", "LigerEmbedding",
                    ("liger-kernel", "torch", "triton"), ("liger_kernel.transformers.experimental.embedding",),
                    _bind_embedding_liger),
            Adapter("torch-compile", "embedding", "torch-compile-embedding", "torch.compile", "pytorch", "python",
                    "torch", "compile(torch.nn.Embedding)", ("torch", "triton"), ("torch._inductor",),
                    _bind_embedding_compile),
        ]
    raise ValueError(f"the runner has no adapters for operation {operation!r}; it verifies rope and embedding")


def select(operation: str, keys: list[str] | None) -> list[Adapter]:
    known = adapters_for(operation)
    if not keys:
        return known
    by_key = {a.key: a for a in known}
    unknown = [k for k in keys if k not in by_key]
    if unknown:
        raise ValueError(f"unknown implementation {', '.join(unknown)}; choose from {', '.join(by_key)}")
    return [by_key[k] for k in keys]
