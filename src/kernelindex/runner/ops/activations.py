"""Activations: softmax, sparsemax, relu-squared, megatron-swiglu (SwiGLU on a fused gate-up tensor)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import torch

from kernelindex.domain.manifests import WorkloadCase
from kernelindex.runner.adapters import compiled, ours
from kernelindex.runner.definitions import REGIONS, Adapter, Bound, OperationDef, Tensors
from kernelindex.runner.inputs import randn, tensor_decls

LIGER = ("liger-kernel", "torch", "triton")


def _one_input(name: str, scale: float = 1.0) -> Callable[..., Tensors]:
    def make(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
        return {name: randn(tensor_decls(workload)[name], gen, device, scale)}
    return make


def _bind(fn_of: Callable[[Adapter], Callable[..., Any]], arg: str, out: str) -> Callable[[Adapter, Tensors], Bound]:
    def bind(adapter: Adapter, x: Tensors) -> Bound:
        fn = fn_of(adapter)
        value = x[arg]
        return lambda: {out: fn(value)}
    return bind


def _liger_instance(module: str, symbol: str, kwargs: dict[str, Any]) -> Callable[..., Any]:
    """Liger's module class, imported when its adapter binds (listing the adapter needs no Liger)."""
    return getattr(importlib.import_module(module), symbol)(**kwargs)


def _adapters(slug: str, baseline: Adapter, liger_module: str, liger_symbol: str,
              plain: Callable[[], Callable[..., Any]], compiled_symbol: str, arg: str = "x", out: str = "y",
              liger_kwargs: dict[str, Any] | None = None) -> list[Adapter]:
    return [
        baseline,
        Adapter("liger", slug, f"liger-kernel-{slug}", "Liger", "liger-kernel", "triton", liger_module, liger_symbol,
                LIGER, (liger_module,),
                _bind(lambda a: _liger_instance(liger_module, liger_symbol, liger_kwargs or {}), arg, out)),
        Adapter("torch-compile", slug, f"torch-compile-{slug}", "torch.compile", "pytorch", "python", "torch",
                f"compile({compiled_symbol})", ("torch", "triton"), ("torch._inductor",),
                _bind(lambda a: compiled(a, plain), arg, out)),
    ]


# --- softmax --------------------------------------------------------------------------------------


def _torch_softmax() -> Callable[..., Any]:
    return torch.nn.Softmax(dim=-1)


def _softmax_adapters() -> list[Adapter]:
    baseline = Adapter("baseline", "softmax", "pytorch-softmax", "PyTorch nn.Softmax", "pytorch", "python", "torch.nn",
                       "Softmax", ("torch",), ("torch.nn",), _bind(lambda a: _torch_softmax(), "x", "y"),
                       role="baseline")
    return _adapters("softmax", baseline, "liger_kernel.transformers.softmax", "LigerSoftmax",
                     _torch_softmax, "torch.nn.Softmax(dim=-1)")


def softmax_reference(x: Tensors) -> Tensors:
    return {"y": torch.softmax(x["x"].double(), dim=-1)}


# --- sparsemax ------------------------------------------------------------------------------------


def _sparsemax(z: torch.Tensor) -> torch.Tensor:
    """Sparsemax over the last dim in z's dtype (Martins & Astudillo 2016): sort descending, find the
    support size k, tau = (sum of the top k - 1) / k, y = max(z - tau, 0)."""
    ranked, _ = torch.sort(z, dim=-1, descending=True)
    ks = torch.arange(1, z.shape[-1] + 1, device=z.device, dtype=z.dtype)
    cumulative = ranked.cumsum(-1)
    support = (1 + ks * ranked > cumulative).sum(-1, keepdim=True)
    tau = (cumulative.gather(-1, support - 1) - 1) / support.to(z.dtype)
    return torch.clamp(z - tau, min=0)


def sparsemax(x: torch.Tensor) -> torch.Tensor:
    """Our baseline from the semantics, computed in fp32 and cast back."""
    return _sparsemax(x.float()).to(x.dtype)


def sparsemax_reference(x: Tensors) -> Tensors:
    return {"y": _sparsemax(x["x"].double())}


def _our_adapters(slug: str, fn: Callable[[torch.Tensor], torch.Tensor], what: str, liger_module: str,
                  liger_symbol: str, arg: str = "x", out: str = "y",
                  liger_kwargs: dict[str, Any] | None = None) -> list[Adapter]:
    """An activation whose baseline is our own ``fn`` of this module (``what`` it computes, for its title)."""
    baseline = ours(slug, f"activations.{fn.__name__}", _bind(lambda a: fn, arg, out),
                    f"PyTorch {what} (KernelIndex baseline)")
    return _adapters(slug, baseline, liger_module, liger_symbol, lambda: fn, f"{__name__}.{fn.__name__}", arg, out,
                     liger_kwargs)


def _sparsemax_adapters() -> list[Adapter]:
    return _our_adapters("sparsemax", sparsemax, "sparsemax", "liger_kernel.transformers.sparsemax", "LigerSparsemax",
                         liger_kwargs={"dim": -1})


# --- relu-squared ---------------------------------------------------------------------------------


def relu_squared(x: torch.Tensor) -> torch.Tensor:
    """Our baseline: relu(x) ** 2 in the input's dtype."""
    return torch.relu(x).square()


def _relu_squared_adapters() -> list[Adapter]:
    return _our_adapters("relu-squared", relu_squared, "relu(x)²", "liger_kernel.transformers.relu_squared",
                         "LigerReLUSquared")


# --- megatron-swiglu ------------------------------------------------------------------------------


def silu_and_mul(y: torch.Tensor) -> torch.Tensor:
    """Our baseline: split the last dim into gate and up, silu(gate) * up, in the input's dtype."""
    gate, up = torch.chunk(y, 2, dim=-1)
    return torch.nn.functional.silu(gate) * up


def silu_and_mul_reference(x: Tensors) -> Tensors:
    return {"out": silu_and_mul(x["y"].double())}


def _megatron_swiglu_adapters() -> list[Adapter]:
    return _our_adapters("megatron-swiglu", silu_and_mul, "silu(gate) · up", "liger_kernel.megatron",
                         "LigerMegatronSwiGLU", arg="y", out="out")


OPERATIONS = [
    OperationDef("softmax", _one_input("x"), softmax_reference, _softmax_adapters, ("x",), REGIONS),
    OperationDef("sparsemax", _one_input("x"), sparsemax_reference, _sparsemax_adapters, ("x",), REGIONS),
    OperationDef("relu-squared", _one_input("x"), lambda x: {"y": relu_squared(x["x"].double())},
                 _relu_squared_adapters, ("x",), REGIONS),
    OperationDef("megatron-swiglu", _one_input("y"), silu_and_mul_reference, _megatron_swiglu_adapters, ("y",),
                 REGIONS),
]
