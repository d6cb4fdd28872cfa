"""Gated MLPs: swiglu-mlp and geglu-mlp (Transformers' LlamaMLP with silu / gelu_pytorch_tanh), and
llama4-rope (complex-frequency rotary embedding, Transformers' Llama 4 ``apply_rotary_emb``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from kernelindex.domain.manifests import WorkloadCase
from kernelindex.runner.adapters import compiled, module_call
from kernelindex.runner.definitions import REGIONS, Adapter, Bound, OperationDef, Tensors
from kernelindex.runner.inputs import place, randn, tensor_decls

LIGER = ("liger-kernel", "torch", "triton")
HF_LLAMA = "transformers.models.llama.modeling_llama"
WEIGHTS = {"gate_weight": "gate_proj.weight", "up_weight": "up_proj.weight", "down_weight": "down_proj.weight"}


def mlp_inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    """x ~ N(0, 1); each weight ~ N(0, 1/fan_in), so activations stay O(1) in bf16."""
    decls = tensor_decls(workload)
    out = {"x": randn(decls["x"], gen, device)}
    for name in WEIGHTS:
        out[name] = randn(decls[name], gen, device, 1 / math.sqrt(decls[name].shape[1]))
    return out


def _mlp_reference(activation: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[Tensors], Tensors]:
    def reference(x: Tensors) -> Tensors:
        h = x["x"].double()
        gate = h @ x["gate_weight"].double().T
        up = h @ x["up_weight"].double().T
        return {"y": (activation(gate) * up) @ x["down_weight"].double().T}
    return reference


def _config(x: Tensors, act: str) -> Any:
    from transformers import LlamaConfig

    return LlamaConfig(hidden_size=x["x"].shape[-1], intermediate_size=x["gate_weight"].shape[0], hidden_act=act,
                       mlp_bias=False)


def _llama_mlp(act: str) -> Callable[[Tensors], torch.nn.Module]:
    def make(x: Tensors) -> torch.nn.Module:
        from transformers.models.llama.modeling_llama import LlamaMLP

        with torch.device("meta"):
            return LlamaMLP(_config(x, act))
    return make


def _liger_mlp(act: str) -> Callable[[Tensors], torch.nn.Module]:
    def make(x: Tensors) -> torch.nn.Module:
        if act == "silu":
            from liger_kernel.transformers.swiglu import LigerSwiGLUMLP as Module
        else:
            from liger_kernel.transformers.geglu import LigerGEGLUMLP as Module
        with torch.device("meta"):
            return Module(_config(x, act))
    return make


Binder = Callable[[Adapter, Tensors], Bound]


def _bind_mlp(make: Callable[[Tensors], torch.nn.Module], *, compile_it: bool = False) -> Binder:
    def bind(adapter: Adapter, x: Tensors) -> Bound:
        module = make(x)

        def forward(h: torch.Tensor, gate: torch.Tensor, up: torch.Tensor, down: torch.Tensor) -> torch.Tensor:
            params = dict(zip(WEIGHTS.values(), (gate, up, down), strict=True))
            return module_call(module, params, h)

        fn = compiled(adapter, lambda: forward) if compile_it else forward
        args = [x["x"], *(x[n] for n in WEIGHTS)]
        return lambda: {"y": fn(*args)}
    return bind


def _mlp_adapters(
    slug: str, act: str, baseline_title: str, liger_module: str, liger_symbol: str
) -> Callable[[], list[Adapter]]:
    def adapters() -> list[Adapter]:
        return [
            Adapter("baseline", slug, f"transformers-llama-mlp-{slug.split('-')[0]}", baseline_title, "transformers",
                    "python", HF_LLAMA, "LlamaMLP", ("transformers", "torch"), (HF_LLAMA,),
                    _bind_mlp(_llama_mlp(act)), role="baseline"),
            Adapter("liger", slug, f"liger-kernel-{slug}", "Liger", "liger-kernel", "triton", liger_module,
                    liger_symbol, LIGER, (liger_module,), _bind_mlp(_liger_mlp(act))),
            Adapter("torch-compile", slug, f"torch-compile-{slug}", "torch.compile", "pytorch", "python", "torch",
                    f"compile({HF_LLAMA}.LlamaMLP)", ("torch", "transformers", "triton"), (HF_LLAMA,),
                    _bind_mlp(_llama_mlp(act), compile_it=True)),
        ]
    return adapters


def gelu_tanh(a: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(a, approximate="tanh")


# --- llama4-rope ----------------------------------------------------------------------------------


def llama4_inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    """q, k ~ N(0, 1); freqs_cis a real Llama-style frequency table (base 500000) at a random position
    offset, stored as interleaved (real, imag) fp32 pairs."""
    decls = tensor_decls(workload)
    seq, half = decls["freqs_cis"].shape[1], decls["freqs_cis"].shape[2]
    offset = int(torch.randint(0, 1 << 16, (1,), generator=gen, device=device).item())
    positions = torch.arange(offset, offset + seq, dtype=torch.float64, device=device)
    inv_freq = 1.0 / (500000.0 ** (torch.arange(0, half, dtype=torch.float64, device=device) / half))
    angles = torch.outer(positions, inv_freq)
    table = torch.stack((angles.cos(), angles.sin()), dim=-1).unsqueeze(0)
    return {"q": randn(decls["q"], gen, device), "k": randn(decls["k"], gen, device),
            "freqs_cis": place(table, decls["freqs_cis"], device)}


def llama4_reference(x: Tensors) -> Tensors:
    freqs = torch.view_as_complex(x["freqs_cis"].double().contiguous())[:, :, None, :]
    out = {}
    for name in ("q", "k"):
        t = x[name].double()
        pairs = torch.view_as_complex(t.reshape(*t.shape[:-1], -1, 2).contiguous())
        out[f"{name}_out"] = torch.view_as_real(pairs * freqs).flatten(3)
    return out


def _hf_llama4() -> Callable[..., Any]:
    from transformers.models.llama4.modeling_llama4 import apply_rotary_emb

    return apply_rotary_emb


def _bind_llama4(fn_of: Callable[[Adapter], Callable[..., Any]]) -> Callable[[Adapter, Tensors], Bound]:
    def bind(adapter: Adapter, x: Tensors) -> Bound:
        fn = fn_of(adapter)
        freqs = torch.view_as_complex(x["freqs_cis"])  # [1, seq, head_dim / 2] complex64, a view

        def call() -> Tensors:
            q_out, k_out = fn(x["q"], x["k"], freqs)
            return {"q_out": q_out, "k_out": k_out}
        return call
    return bind


def _liger_llama4(adapter: Adapter) -> Callable[..., Any]:
    from liger_kernel.transformers.llama4_rope import liger_llama4_text_rotary_pos_emb

    return liger_llama4_text_rotary_pos_emb


def _llama4_adapters() -> list[Adapter]:
    hf, liger = "transformers.models.llama4.modeling_llama4", "liger_kernel.transformers.llama4_rope"
    return [
        Adapter("baseline", "llama4-rope", "transformers-llama4-rope", "Transformers (Llama 4 apply_rotary_emb)",
                "transformers", "python", hf, "apply_rotary_emb", ("transformers", "torch"), (hf,),
                _bind_llama4(lambda a: _hf_llama4()), role="baseline"),
        Adapter("liger", "llama4-rope", "liger-kernel-llama4-rope", "Liger", "liger-kernel", "triton", liger,
                "liger_llama4_text_rotary_pos_emb", LIGER, (liger,), _bind_llama4(_liger_llama4), in_place=True),
        Adapter("torch-compile", "llama4-rope", "torch-compile-llama4-rope", "torch.compile", "pytorch", "python",
                "torch", f"compile({hf}.apply_rotary_emb)", ("torch", "transformers", "triton"), (hf,),
                _bind_llama4(lambda a: compiled(a, _hf_llama4))),
    ]


WEIGHT_NAMES = ("x", *WEIGHTS)
OPERATIONS = [
    OperationDef("swiglu-mlp", mlp_inputs, _mlp_reference(torch.nn.functional.silu),
                 _mlp_adapters("swiglu-mlp", "silu", "Transformers LlamaMLP", "liger_kernel.transformers.swiglu",
                               "LigerSwiGLUMLP"), WEIGHT_NAMES, REGIONS),
    OperationDef("geglu-mlp", mlp_inputs, _mlp_reference(gelu_tanh),
                 _mlp_adapters("geglu-mlp", "gelu_pytorch_tanh", "Transformers LlamaMLP (gelu_pytorch_tanh)",
                               "liger_kernel.transformers.geglu", "LigerGEGLUMLP"), WEIGHT_NAMES, REGIONS),
    OperationDef("llama4-rope", llama4_inputs, llama4_reference, _llama4_adapters, ("q", "k"), REGIONS),
]
