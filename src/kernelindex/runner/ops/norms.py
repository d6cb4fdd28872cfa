"""Normalizations: rms-norm, fused-add-rms-norm, layer-norm, group-norm, megatron-rms-norm.

eps is 1e-6 throughout: the Liger benchmarks' value, and the only one their cases record (a case
recording another is refused rather than measured with the wrong eps). Weights are random around
1 and biases random, so a kernel that ignores them fails.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from kernelindex.domain.manifests import WorkloadCase
from kernelindex.runner.adapters import compiled, module_call, ours
from kernelindex.runner.definitions import REGIONS, Adapter, Bound, OperationDef, Tensors
from kernelindex.runner.inputs import randn, tensor_decls

EPS = 1e-6
Binder = Callable[[Adapter, Tensors], Bound]
LIGER = ("liger-kernel", "torch", "triton")


def check_eps(workload: WorkloadCase) -> None:
    eps = workload.spec.params.get("eps")
    if eps is not None and float(eps) != EPS:
        raise ValueError(f"the runner's normalizations use eps {EPS}; this case records eps {eps}")


def _inputs(names_scales: dict[str, float], offsets: dict[str, float]) -> Callable[..., Tensors]:
    def make(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
        check_eps(workload)
        decls = tensor_decls(workload)
        out = {}
        for name, scale in names_scales.items():
            tensor = randn(decls[name], gen, device, scale)
            if name in offsets:
                with torch.no_grad():
                    tensor.add_(offsets[name])
            out[name] = tensor
        return out
    return make


# --- references (float64) ------------------------------------------------------------------------


def rms(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    x = x.double()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * weight.double()


def rms_norm_reference(x: Tensors) -> Tensors:
    return {"y": rms(x["x"], x["weight"])}


def fused_add_rms_norm_reference(x: Tensors) -> Tensors:
    s = x["x"].double() + x["residual"].double()
    return {"y": rms(s, x["weight"]), "residual_out": s}


def layer_norm_reference(x: Tensors) -> Tensors:
    hidden = x["x"].shape[-1]
    return {"y": torch.nn.functional.layer_norm(x["x"].double(), (hidden,), x["weight"].double(),
                                                x["bias"].double(), EPS)}


def group_norm_reference(x: Tensors, groups: int) -> Tensors:
    return {"y": torch.nn.functional.group_norm(x["x"].double(), groups, x["weight"].double(),
                                                x["bias"].double(), EPS)}


# --- rms-norm: Transformers' LlamaRMSNorm, Liger, torch.compile ---------------------------------------


def _llama_rms_norm(hidden: int) -> torch.nn.Module:
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    with torch.device("meta"):
        return LlamaRMSNorm(hidden, eps=EPS)


def _module_forward(module: torch.nn.Module, *params: str) -> Callable[..., Any]:
    """f(x, *weights) = module(x) with the weights in place of its parameters."""
    return lambda x, *weights: module_call(module, dict(zip(params, weights, strict=True)), x)


def _bind_module(make: Callable[[Tensors], torch.nn.Module], params: tuple[str, ...], *,
                 compile_it: bool = False, inputs: tuple[str, ...] = ("weight",)) -> Binder:
    def bind(adapter: Adapter, x: Tensors) -> Bound:
        fn = _module_forward(make(x), *params)
        if compile_it:
            fn = compiled(adapter, lambda: fn)
        args = [x[name] for name in inputs]
        return lambda: {"y": fn(x["x"], *args)}
    return bind


def _liger_rms_norm(x: Tensors) -> torch.nn.Module:
    from liger_kernel.transformers.rms_norm import LigerRMSNorm

    with torch.device("meta"):
        return LigerRMSNorm(x["x"].shape[-1], eps=EPS)


def _rms_norm_adapters() -> list[Adapter]:
    hf = "transformers.models.llama.modeling_llama"
    make = lambda x: _llama_rms_norm(x["x"].shape[-1])  # noqa: E731
    return [
        Adapter("baseline", "rms-norm", "transformers-llama-rms-norm", "Transformers LlamaRMSNorm", "transformers",
                "python", hf, "LlamaRMSNorm", ("transformers", "torch"), (hf,), _bind_module(make, ("weight",)),
                role="baseline"),
        Adapter("liger", "rms-norm", "liger-kernel-rms-norm", "Liger", "liger-kernel", "triton",
                "liger_kernel.transformers.rms_norm", "LigerRMSNorm", LIGER, ("liger_kernel.transformers.rms_norm",),
                _bind_module(_liger_rms_norm, ("weight",))),
        Adapter("torch-compile", "rms-norm", "torch-compile-rms-norm", "torch.compile", "pytorch", "python", "torch",
                f"compile({hf}.LlamaRMSNorm)", ("torch", "transformers", "triton"), (hf,),
                _bind_module(make, ("weight",), compile_it=True)),
    ]


# --- fused-add-rms-norm: our add + RMSNorm, Liger, torch.compile -----------------------------------


def add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Our baseline from the spec's semantics: the sum in fp32, RMSNorm in fp32, cast back."""
    s = x.float() + residual.float()
    y = s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + EPS)
    return (weight.float() * y).to(x.dtype), s.to(x.dtype)


def _bind_add_rms(fn_of: Callable[[Adapter], Callable[..., Any]]) -> Callable[[Adapter, Tensors], Bound]:
    def bind(adapter: Adapter, x: Tensors) -> Bound:
        fn = fn_of(adapter)

        def call() -> Tensors:
            y, residual_out = fn(x["x"], x["residual"], x["weight"])
            return {"y": y, "residual_out": residual_out}
        return call
    return bind


def _liger_fused_add(adapter: Adapter) -> Callable[..., Any]:
    from liger_kernel.transformers.fused_add_rms_norm import LigerFusedAddRMSNorm

    with torch.device("meta"):
        module = LigerFusedAddRMSNorm(1, eps=EPS)
    return lambda x, residual, weight: module_call(module, {"weight": weight}, x, residual)


def _fused_add_adapters() -> list[Adapter]:
    liger = "liger_kernel.transformers.fused_add_rms_norm"
    return [
        ours("fused-add-rms-norm", "norms.add_rms_norm", _bind_add_rms(lambda a: add_rms_norm),
             "PyTorch add + RMSNorm (KernelIndex baseline)"),
        Adapter("liger", "fused-add-rms-norm", "liger-kernel-fused-add-rms-norm", "Liger fused add + RMSNorm",
                "liger-kernel", "triton", liger, "LigerFusedAddRMSNorm", LIGER, (liger,),
                _bind_add_rms(_liger_fused_add)),
        Adapter("torch-compile", "fused-add-rms-norm", "torch-compile-fused-add-rms-norm", "torch.compile", "pytorch",
                "python", "torch", "compile(kernelindex.runner.ops.norms.add_rms_norm)", ("torch", "triton"),
                ("torch._inductor",), _bind_add_rms(lambda a: compiled(a, lambda: add_rms_norm))),
    ]


# --- layer-norm and group-norm: torch.nn modules, Liger, torch.compile -------------------------------


def _layer_norm(x: Tensors) -> torch.nn.Module:
    with torch.device("meta"):
        return torch.nn.LayerNorm(x["x"].shape[-1], eps=EPS)


def _liger_layer_norm(x: Tensors) -> torch.nn.Module:
    from liger_kernel.transformers.layer_norm import LigerLayerNorm

    with torch.device("meta"):
        return LigerLayerNorm(x["x"].shape[-1], eps=EPS)


def _groups(x: Tensors) -> int:
    return int(x["groups"].item()) if "groups" in x else 1


def _group_norm(groups: Callable[[Tensors], int]) -> Callable[[Tensors], torch.nn.Module]:
    def make(x: Tensors) -> torch.nn.Module:
        with torch.device("meta"):
            return torch.nn.GroupNorm(groups(x), x["x"].shape[1], eps=EPS)
    return make


Maker = Callable[[Tensors], torch.nn.Module]


def _norm_adapters(slug: str, title: str, symbol: str, make: Maker, liger_module: str, liger_symbol: str,
                   liger_make: Maker) -> list[Adapter]:
    wb = ("weight", "bias")
    return [
        Adapter("baseline", slug, f"pytorch-{slug}", title, "pytorch", "python", "torch.nn", symbol, ("torch",),
                ("torch.nn",), _bind_module(make, wb, inputs=wb), role="baseline"),
        Adapter("liger", slug, f"liger-kernel-{slug}", "Liger", "liger-kernel", "triton", liger_module, liger_symbol,
                LIGER, (liger_module,), _bind_module(liger_make, wb, inputs=wb)),
        Adapter("torch-compile", slug, f"torch-compile-{slug}", "torch.compile", "pytorch", "python", "torch",
                f"compile(torch.nn.{symbol})", ("torch", "triton"), ("torch._inductor",),
                _bind_module(make, wb, compile_it=True, inputs=wb)),
    ]


def _layer_norm_adapters() -> list[Adapter]:
    return _norm_adapters("layer-norm", "PyTorch nn.LayerNorm", "LayerNorm", _layer_norm,
                          "liger_kernel.transformers.layer_norm", "LigerLayerNorm", _liger_layer_norm)


def _group_norm_inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    """x, weight, bias, and ``groups``: the case's group count as a 0-d CPU tensor (the call needs
    it and it is not a shape), never timed or compared."""
    out = _inputs({"x": 1.0, "weight": 0.1, "bias": 0.1}, {"weight": 1.0})(workload, gen, device)
    axes = workload.spec.axes
    out["groups"] = torch.tensor(axes["channels"] // axes["channels_per_group"])
    return out


def _liger_group_norm(x: Tensors) -> torch.nn.Module:
    from liger_kernel.transformers.group_norm import LigerGroupNorm

    with torch.device("meta"):
        return LigerGroupNorm(x["x"].shape[1], _groups(x), eps=EPS)


def _group_norm_adapters() -> list[Adapter]:
    return _norm_adapters("group-norm", "PyTorch nn.GroupNorm", "GroupNorm", _group_norm(_groups),
                          "liger_kernel.transformers.group_norm", "LigerGroupNorm", _liger_group_norm)


# --- megatron-rms-norm: torch.nn.RMSNorm, Liger's Megatron wrapper, torch.compile ----------------------


def _torch_rms_norm(x: Tensors) -> torch.nn.Module:
    with torch.device("meta"):
        return torch.nn.RMSNorm(x["x"].shape[-1], eps=EPS)


def _liger_megatron_rms_norm(x: Tensors) -> torch.nn.Module:
    from types import SimpleNamespace

    from liger_kernel.megatron import LigerMegatronRMSNorm

    config = SimpleNamespace(normalization="RMSNorm", sequence_parallel=False, layernorm_zero_centered_gamma=False)
    with torch.device("meta"):
        return LigerMegatronRMSNorm(config, x["x"].shape[-1], eps=EPS)


def _megatron_rms_norm_adapters() -> list[Adapter]:
    slug, w = "megatron-rms-norm", ("weight",)
    return [
        Adapter("baseline", slug, "pytorch-rms-norm", "PyTorch nn.RMSNorm", "pytorch", "python", "torch.nn", "RMSNorm",
                ("torch",), ("torch.nn",), _bind_module(_torch_rms_norm, w), role="baseline"),
        Adapter("liger", slug, "liger-kernel-megatron-rms-norm", "Liger (Megatron wrapper)", "liger-kernel", "triton",
                "liger_kernel.megatron", "LigerMegatronRMSNorm", LIGER, ("liger_kernel.megatron",),
                _bind_module(_liger_megatron_rms_norm, w)),
        Adapter("torch-compile", slug, "torch-compile-megatron-rms-norm", "torch.compile", "pytorch", "python", "torch",
                "compile(torch.nn.RMSNorm)", ("torch", "triton"), ("torch._inductor",),
                _bind_module(_torch_rms_norm, w, compile_it=True)),
    ]


NORM_INPUTS = _inputs({"x": 1.0, "weight": 0.1}, {"weight": 1.0})

OPERATIONS = [
    OperationDef("rms-norm", NORM_INPUTS, rms_norm_reference, _rms_norm_adapters, ("x", "weight"), REGIONS),
    OperationDef("fused-add-rms-norm", _inputs({"x": 1.0, "residual": 1.0, "weight": 0.1}, {"weight": 1.0}),
                 fused_add_rms_norm_reference, _fused_add_adapters, ("x", "residual", "weight"), REGIONS),
    OperationDef("layer-norm", _inputs({"x": 1.0, "weight": 0.1, "bias": 0.1}, {"weight": 1.0}),
                 layer_norm_reference, _layer_norm_adapters, ("x", "weight", "bias"), REGIONS),
    OperationDef("group-norm", _group_norm_inputs,
                 lambda x: group_norm_reference(x, _groups(x)), _group_norm_adapters, ("x", "weight", "bias"), REGIONS),
    OperationDef("megatron-rms-norm", NORM_INPUTS, rms_norm_reference, _megatron_rms_norm_adapters,
                 ("x", "weight"), REGIONS),
]
