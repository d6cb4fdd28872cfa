"""dyt (Dynamic Tanh) and poly-norm (PolyNorm): the two normalizations Liger-Kernel benchmarks only in its
NVIDIA B200 file. Their baselines there are defined inside Liger's own scripts (``TorchDyT`` in a test,
``NaivePolyNorm`` in a benchmark), not in an installable package, so the baseline here is KernelIndex's
plain-PyTorch function below, written from each spec's semantics.

Regions are the source's: forward, backward (the gradients of the input and of every parameter, as
``y.backward(dy)`` on the benchmarked module computes them) and forward+backward.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from kernelindex.domain.manifests import WorkloadCase
from kernelindex.runner.adapters import module_call
from kernelindex.runner.definitions import REGIONS, Adapter, Bound, OperationDef, Tensors
from kernelindex.runner.ops._common import (
    Binder,
    compiled,
    dtype,
    liger,
    our_baseline,
    param,
    params_of,
    place,
    randn,
    shape,
    torch_compile,
    with_params,
)

MODULE = "kernelindex.runner.ops.tanh_poly_norms"
POLY_NORM_EPS = 1e-6  # the benchmark's eps and the module's default; a case records its own in params.eps


# --- dyt: y = gamma * tanh(alpha * x) (+ beta) ------------------------------------------------------


def has_beta(workload: WorkloadCase) -> bool:
    """Whether the case's module adds the per-channel bias (``params.beta``, recorded by every Liger row)."""
    value = param(workload, "beta", None)
    if not isinstance(value, bool):
        raise ValueError(f"dyt case {dict(workload.spec.axes)} records no boolean params.beta (got {value!r}); "
                         "the runner cannot tell whether the module adds beta — import the case with its params")
    return value


def _dyt_inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    """x ~ N(0, 1); alpha near the module's initial 0.5, gamma near 1 and beta near 0 but random, so an
    implementation that ignores one of them fails. beta (outside the spec's input list) only where the
    case's module has it, shaped like gamma."""
    values = {
        "x": randn(workload, "x", gen, device),
        "alpha": 0.5 + 0.05 * randn(workload, "alpha", gen, device),
        "gamma": 1.0 + 0.1 * randn(workload, "gamma", gen, device),
    }
    inputs = place(values, workload, device)
    if has_beta(workload):
        beta = 0.1 * torch.randn(shape(workload, "gamma"), generator=gen, device=device)
        inputs["beta"] = beta.to(dtype(workload, "gamma"))
    return inputs


def dyt(x: torch.Tensor, alpha: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor | None = None) -> torch.Tensor:
    """Our baseline: gamma * tanh(alpha * x), plus beta when given, in the inputs' dtype."""
    y = gamma * torch.tanh(alpha * x)
    return y if beta is None else y + beta


def dyt_reference(x: Tensors) -> Tensors:
    beta = x["beta"].double() if "beta" in x else None
    return {"y": dyt(x["x"].double(), x["alpha"].double(), x["gamma"].double(), beta)}


DytFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, "torch.Tensor | None"], torch.Tensor]
PolyFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def _bind_dyt(fn_of: Callable[[Adapter, Tensors], DytFn]) -> Binder:
    def bind(adapter: Adapter, x: Tensors) -> Bound:
        fn = fn_of(adapter, x)
        args = (x["x"], x["alpha"], x["gamma"], x.get("beta"))
        return lambda: {"y": fn(*args)}
    return bind


def _liger_dyt(adapter: Adapter, x: Tensors) -> DytFn:
    """Liger's module, built on the meta device and called with the inputs in place of its parameters."""
    from liger_kernel.transformers.dyt import LigerDyT

    with torch.device("meta"):
        module = LigerDyT(x["x"].shape[-1], beta="beta" in x)

    def call(x_: torch.Tensor, alpha: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor | None) -> torch.Tensor:
        weights = {"alpha": alpha, "gamma": gamma} | ({} if beta is None else {"beta": beta})
        return module_call(module, weights, x_)
    return call


def _dyt_adapters() -> list[Adapter]:
    return [
        our_baseline("dyt", MODULE, "dyt", _bind_dyt(lambda a, x: dyt)),
        liger("dyt", "liger-kernel-dyt", "liger_kernel.transformers.dyt", "LigerDyT", _bind_dyt(_liger_dyt)),
        torch_compile("dyt", f"{MODULE}.dyt", _bind_dyt(lambda a, x: compiled(a, lambda: dyt))),
    ]


# --- poly-norm: y = w0·norm(x³) + w1·norm(x²) + w2·norm(x) + b ------------------------------------------


def _poly_norm_inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    """x ~ N(0, 1); the weights near the module's initial 1/3 and the bias near its initial 1, random."""
    values = {
        "x": randn(workload, "x", gen, device),
        "weight": 1.0 / 3.0 + 0.05 * randn(workload, "weight", gen, device),
        "bias": 1.0 + 0.1 * randn(workload, "bias", gen, device),
    }
    return with_params(place(values, workload, device), workload, {"eps": POLY_NORM_EPS})


def _rms_normalized(u: torch.Tensor, eps: float) -> torch.Tensor:
    return u * torch.rsqrt(u.pow(2).mean(-1, keepdim=True) + eps)


def poly_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = POLY_NORM_EPS) -> torch.Tensor:
    """Our baseline: the powers of x normalized and weighted in float32 (as the spec says), cast back."""
    u = x.float()
    y = (weight[0] * _rms_normalized(u.pow(3), eps) + weight[1] * _rms_normalized(u.pow(2), eps)
         + weight[2] * _rms_normalized(u, eps) + bias)
    return y.to(x.dtype)


def poly_norm_reference(x: Tensors) -> Tensors:
    u, w, eps = x["x"].double(), x["weight"].double(), float(params_of(x)["eps"])
    y = sum(w[i] * _rms_normalized(u.pow(3 - i), eps) for i in range(3)) + x["bias"].double()
    return {"y": y}


def _bind_poly_norm(fn_of: Callable[[Adapter, float], PolyFn]) -> Binder:
    def bind(adapter: Adapter, x: Tensors) -> Bound:
        eps = float(params_of(x)["eps"])
        fn = fn_of(adapter, eps)
        args = (x["x"], x["weight"], x["bias"])
        return lambda: {"y": fn(*args)}
    return bind


def _baseline_poly_norm(adapter: Adapter, eps: float) -> PolyFn:
    return lambda x, weight, bias: poly_norm(x, weight, bias, eps)


def _compiled_poly_norm(adapter: Adapter, eps: float) -> PolyFn:
    return compiled(adapter, lambda: _baseline_poly_norm(adapter, eps))


def _liger_poly_norm(adapter: Adapter, eps: float) -> PolyFn:
    """Liger's module as the benchmark builds it (its default in_place=True: the backward writes the input
    gradient into the upstream gradient's buffer). Its bias parameter is 0-d where the spec's is [1]: a view
    of the bias input is passed, so autograd hands the gradient back in the input's shape."""
    from liger_kernel.transformers.poly_norm import LigerPolyNorm

    with torch.device("meta"):
        module = LigerPolyNorm(eps=eps)
    return lambda x, weight, bias: module_call(module, {"weight": weight, "bias": bias.view(())}, x)


def _poly_norm_adapters() -> list[Adapter]:
    return [
        our_baseline("poly-norm", MODULE, "poly_norm", _bind_poly_norm(_baseline_poly_norm)),
        liger("poly-norm", "liger-kernel-poly-norm", "liger_kernel.transformers.poly_norm", "LigerPolyNorm",
              _bind_poly_norm(_liger_poly_norm)),
        torch_compile("poly-norm", f"{MODULE}.poly_norm", _bind_poly_norm(_compiled_poly_norm)),
    ]


OPERATIONS = [
    OperationDef("dyt", _dyt_inputs, dyt_reference, _dyt_adapters, ("x", "alpha", "gamma", "beta"), REGIONS,
                 optional_inputs=("beta",)),
    OperationDef("poly-norm", _poly_norm_inputs, poly_norm_reference, _poly_norm_adapters,
                 ("x", "weight", "bias"), REGIONS),
]
