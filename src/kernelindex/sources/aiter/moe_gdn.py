"""Fused-MoE and Gated DeltaNet operations of aiter's tables (see operations.py for the GEMMs)."""

from __future__ import annotations

from dataclasses import dataclass

from kernelindex.domain.manifests import OperationSpec, build
from kernelindex.sources.aiter.operations import SCALES_NOT_COUNTED, SOURCE_WORDS

SHORT = {"bf16": "bf16", "fp8_e4m3": "fp8e4m3", "fp8_e4m3fnuz": "fp8e4m3fnuz", "float4_e2m1fn_x2": "fp4x2",
         "int4": "int4", "int8": "int8"}
PACKED = {"float4_e2m1fn_x2": 2}  # values per stored element


@dataclass(frozen=True)
class MoeKey:
    """What a fused-MoE row computes: activation, quantization, dtypes and the expert layout."""

    activation: str  # silu, gelu, swiglu, situv2 (aiter's ActivationType, lower case)
    quant: str  # no, per-token, per-tensor, per-1x128, per-1x32 (aiter's QuantType)
    dtype: str  # activations in and out
    q_a: str  # the activations' quantized dtype inside the kernel
    q_w: str  # the expert weights' dtype
    gate_up: bool  # use_g1u1: w1 holds gate and up (2·inter rows)
    weight_in_stage1: bool  # doweight_stage1: the routing weight applied before the down projection
    model_dim: int
    inter_dim: int
    experts: int
    topk: int

    @property
    def slug(self) -> str:
        dtype = "" if self.dtype == "bf16" else f"-{SHORT[self.dtype]}"
        return (f"fused-moe-{self.activation}-{self.quant}{dtype}-a{SHORT[self.q_a]}-w{SHORT[self.q_w]}"
                f"-e{self.experts}-top{self.topk}-d{self.model_dim}-i{self.inter_dim}"
                f"{'' if self.gate_up else '-nogu'}{'-dw1' if self.weight_in_stage1 else ''}")


def _weight(name: str, rows: str, cols: str, dtype: str) -> dict:
    packed = PACKED.get(dtype)
    shape = ["experts", rows, f"{cols} // {packed}" if packed else cols]
    # A floor counts what every call must read. Each token's top-k experts are distinct, so any routing reads
    # at least top-k experts' weights; min(experts, token · topk) is only the most a call can read (64 tokens ×
    # top 7 over 385 experts ran at 129 µs on the MI355X, under the 265 µs that all 385 would take).
    return {"name": name, "dtype": "QW", "shape": shape, "gather_rows": "min(experts, topk)"}


def moe_operation(key: MoeKey) -> OperationSpec:
    rows = "2 * inter_dim" if key.gate_up else "inter_dim"
    flops = f"2 * token * topk * model_dim * inter_dim * {3 if key.gate_up else 2}"
    body = {
        "family": "moe",
        "semantics": (f"y = Σ over the top-{key.topk} routed experts of weight · w2·{key.activation}(w1·x) "
                      f"({'gate and up in w1' if key.gate_up else 'w1 without a gate'}); activations "
                      f"quantized to {key.q_a} ({key.quant}), expert weights in {key.q_w}; the routing weight "
                      f"applied {'before the down projection (stage 1)' if key.weight_in_stage1 else 'to its output'}"),
        "axes": {"token": {"role": "variable"},
                 **{name: {"role": "constant", "expression": str(value)} for name, value in (
                     ("model_dim", key.model_dim), ("inter_dim", key.inter_dim), ("experts", key.experts),
                     ("topk", key.topk))}},
        "dtype_variables": {"T": [key.dtype], "QA": [key.q_a], "QW": [key.q_w]},
        "inputs": [{"name": "x", "dtype": "T", "shape": ["token", "model_dim"]},
                   _weight("w1", rows, "model_dim", key.q_w), _weight("w2", "model_dim", "inter_dim", key.q_w),
                   {"name": "topk_ids", "dtype": "int32", "shape": ["token", "topk"]},
                   {"name": "topk_weights", "dtype": "fp32", "shape": ["token", "topk"]}],
        "outputs": [{"name": "y", "dtype": "T", "shape": ["token", "model_dim"]}],
        "determinism": "unspecified",
        "reference": "aiter's torch reference of fused_moe (in the tuner; not mirrored here)",
        "flops": flops,
        "constraints": [SCALES_NOT_COUNTED, "weights: only the experts every routing must read are counted: "
                        "top-k of them (each token's k experts are distinct; the tuner's routing is not recorded, "
                        "and a call reads up to min(experts, token × topk))"],
    }
    title = (f"Fused MoE {key.activation} · {key.quant} · {SHORT[key.q_a]} × {SHORT[key.q_w]} · "
             f"{key.experts} experts top-{key.topk} · d {key.model_dim} · i {key.inter_dim}")
    return build("OperationSpec", body, {"name": key.slug, "title": title,
                                         "description": f"{body['semantics']}. {SOURCE_WORDS}",
                                         "labels": {"imported_from": "aiter"}})


@dataclass(frozen=True)
class GdnKey:
    """aiter's chunk_gdn_h_opt: heads, sizes and the flags that change what it reads and writes."""

    k: int
    v: int
    chunk: int  # BT
    heads: int  # H
    k_heads: int  # Hg: heads of k (grouped)
    varlen: bool
    initial_state: bool  # use_h0
    final_state: bool  # store_fs
    snapshot_bf16: bool
    state_bf16: bool

    @property
    def slug(self) -> str:
        flags = [name for name, on in (("varlen", self.varlen), ("h0", self.initial_state),
                                       ("fs", self.final_state), ("hbf16", self.snapshot_bf16),
                                       ("sbf16", self.state_bf16)) if on]
        return (f"chunk-gdn-fwd-h-k{self.k}-v{self.v}-h{self.heads}-hg{self.k_heads}-bt{self.chunk}"
                + "".join(f"-{f}" for f in flags))


def gdn_operation(key: GdnKey) -> OperationSpec:
    state = "bf16" if key.state_bf16 else "fp32"
    inputs = [{"name": "k", "dtype": "T", "shape": ["t", "hg", "dk"]},
              {"name": "w", "dtype": "T", "shape": ["t", "h", "dk"]},
              {"name": "u", "dtype": "T", "shape": ["t", "h", "dv"]},
              {"name": "g", "dtype": "fp32", "shape": ["t", "h"]}]
    if key.initial_state:
        inputs.append({"name": "h0", "dtype": state, "shape": ["n", "h", "dk", "dv"]})
    outputs = [{"name": "h_chunks", "dtype": "bf16" if key.snapshot_bf16 else "fp32",
                "shape": ["total_chunks", "h", "dk", "dv"]},
               {"name": "v_new", "dtype": "T", "shape": ["t", "h", "dv"]}]
    if key.final_state:
        outputs.append({"name": "final_state", "dtype": state, "shape": ["n", "h", "dk", "dv"]})
    constants = (("dk", key.k), ("dv", key.v), ("bt", key.chunk), ("h", key.heads), ("hg", key.k_heads))
    body = {
        "family": "gated-deltanet",
        "semantics": ("Gated DeltaNet chunked forward, state pass: walks each sequence in chunks of bt "
                      "tokens and writes the recurrent state h at every chunk and the corrected values "
                      "v_new (fla's chunk_gated_delta_rule_fwd_h, as aiter's chunk_gdn_h_opt computes it); "
                      + ("variable-length sequences packed along t" if key.varlen else "sequences of equal length")),
        "axes": {"t": {"role": "variable"}, "n": {"role": "variable"}, "total_chunks": {"role": "variable"},
                 **{name: {"role": "constant", "expression": str(value)} for name, value in constants}},
        "dtype_variables": {"T": ["bf16"]},
        "inputs": inputs,
        "outputs": outputs,
        "determinism": "unspecified",
        "reference": "aiter's chunk_gdn_h_opt test reference (not mirrored here)",
        "constraints": ["bandwidth-only: no FLOP count is declared for the recurrence"],
    }
    title = (f"Gated DeltaNet chunk state (fwd h) · K {key.k} · V {key.v} · H {key.heads} / Hg {key.k_heads} · "
             f"chunk {key.chunk}{' · varlen' if key.varlen else ''}")
    return build("OperationSpec", body, {"name": key.slug, "title": title,
                                         "description": f"{body['semantics']}. {SOURCE_WORDS}",
                                         "labels": {"imported_from": "aiter"}})
