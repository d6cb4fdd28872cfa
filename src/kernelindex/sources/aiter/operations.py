"""The operations aiter's rows measure, one per semantics, dtypes and fixed sizes (as the
FlashInfer-Bench definitions are one per GEMM (N, K)): GEMMs per family and (N, K) with M variable,
fused MoE per expert configuration with the token count variable, the Gated DeltaNet chunk kernel
per head configuration. Identity is the canonical digest of what is built here."""

from __future__ import annotations

from dataclasses import dataclass

from kernelindex.domain.manifests import OperationSpec, build

GEMM_FLOPS = "2 * m * n * k"
PRESHUFFLED = "b is stored in aiter's pre-shuffled tile layout (shuffle_weight): the same bytes, another order"
SCALES_NOT_COUNTED = ("scales are not listed: their bytes are not counted, so the floor stays a lower bound")
SOURCE_WORDS = "Shapes from AMD aiter's tuned tables (ROCm/aiter, aiter/configs)."


@dataclass(frozen=True)
class GemmKind:
    """One GEMM family of aiter's tables: what it computes and in which dtypes."""

    prefix: str
    title: str
    semantics: str
    entry: str  # the aiter function the tuned table configures
    quantized: tuple[str, ...] = ()  # dtypes the operand variable Q may take; () = bf16 operands
    scales: str = ""  # "rowwise" | "block128" | "mx32"
    out: str = "bf16"
    bias: bool = False
    preshuffled: bool = False
    batched: bool = False


FP8 = ("fp8_e4m3", "fp8_e4m3fnuz")
GEMM_KINDS: dict[str, GemmKind] = {k.prefix: k for k in (
    GemmKind("gemm-bf16", "GEMM bf16", "C = A·Bᵀ; A [M, K], B [N, K] (TN), bf16 in and out", "tgemm.mm"),
    GemmKind("gemm-bf16-out-fp32", "GEMM bf16 → fp32", "C = A·Bᵀ; A [M, K], B [N, K] (TN), bf16 in, fp32 out",
             "tgemm.mm", out="fp32"),
    GemmKind("gemm-bf16-bias", "GEMM bf16 with bias", "C = A·Bᵀ + bias; A [M, K], B [N, K] (TN), bias [N], bf16",
             "tgemm.mm", bias=True),
    GemmKind("batched-gemm-bf16", "Batched GEMM bf16", "C[b] = A[b]·B[b]ᵀ; A [B, M, K], B [B, N, K], bf16",
             "batched_gemm_bf16", batched=True),
    GemmKind("gemm-a8w8-rowwise", "GEMM A8W8, per-token × per-channel scales",
             "C = (A·Bᵀ) · a_scale · b_scale in bf16; A [M, K] and B [N, K] quantized (int8 or fp8), "
             "a_scale [M, 1] per token, b_scale [1, N] per channel (a per-tensor scale is the broadcast case)",
             "gemm_a8w8", quantized=("int8", *FP8), scales="rowwise"),
    GemmKind("gemm-a8w8-rowwise-bpreshuffle", "GEMM A8W8, per-token × per-channel scales, B pre-shuffled",
             "C = (A·Bᵀ) · a_scale · b_scale in bf16; A [M, K] and B [N, K] quantized (int8 or fp8), "
             "a_scale [M, 1], b_scale [1, N]; B pre-shuffled", "gemm_a8w8_bpreshuffle",
             quantized=("int8", *FP8), scales="rowwise", preshuffled=True),
    GemmKind("gemm-a8w8-blockscale", "GEMM A8W8 fp8, 1×128 / 128×128 block scales",
             "C = A·Bᵀ in bf16 with A [M, K] fp8 scaled per 1×128 block and B [N, K] fp8 per 128×128 block",
             "gemm_a8w8_blockscale", quantized=FP8, scales="block128"),
    GemmKind("gemm-a8w8-blockscale-bpreshuffle", "GEMM A8W8 fp8, block scales, B pre-shuffled",
             "C = A·Bᵀ in bf16 with A [M, K] fp8 scaled per 1×128 block and B [N, K] fp8 per 128×128 block; "
             "B pre-shuffled", "gemm_a8w8_blockscale_bpreshuffle", quantized=FP8, scales="block128",
             preshuffled=True),
    GemmKind("gemm-a4w4-blockscale", "GEMM A4W4 (MXFP4), 1×32 e8m0 scales",
             "C = A·Bᵀ in bf16 with A [M, K] and B [N, K] fp4 (e2m1, two per byte), each scaled per 1×32 block "
             "by an e8m0 exponent", "gemm_a4w4", quantized=("float4_e2m1fn_x2",), scales="mx32"),
)}


def _operand(name: str, rows: str, kind: GemmKind) -> dict:
    lead = ["b"] if kind.batched else []
    if kind.quantized == ("float4_e2m1fn_x2",):
        return {"name": name, "dtype": "Q", "shape": [*lead, rows, "k // 2"]}
    return {"name": name, "dtype": "Q" if kind.quantized else "T", "shape": [*lead, rows, "k"]}


def _scales(kind: GemmKind) -> list[dict]:
    if kind.scales == "rowwise":
        return [{"name": "a_scale", "dtype": "fp32", "shape": ["m", 1]},
                {"name": "b_scale", "dtype": "fp32", "shape": [1, "n"]}]
    if kind.scales == "block128":
        return [{"name": "a_scale", "dtype": "fp32", "shape": ["m", "(k + 127) // 128"]},
                {"name": "b_scale", "dtype": "fp32", "shape": ["(n + 127) // 128", "(k + 127) // 128"]}]
    if kind.scales == "mx32":
        return [{"name": "a_scale", "dtype": "fp8_e8m0", "shape": ["m", "k // 32"]},
                {"name": "b_scale", "dtype": "fp8_e8m0", "shape": ["n", "k // 32"]}]
    return []


def gemm_slug(kind: GemmKind, n: int, k: int, batch: int | None = None) -> str:
    return f"{kind.prefix}{f'-b{batch}' if kind.batched else ''}-n{n}-k{k}"


def gemm_operation(kind: GemmKind, n: int, k: int, batch: int | None = None) -> OperationSpec:
    axes: dict = {"m": {"role": "variable"}, "n": {"role": "constant", "expression": str(n)},
                  "k": {"role": "constant", "expression": str(k)}}
    if kind.batched:
        axes["b"] = {"role": "constant", "expression": str(batch)}
    inputs = [_operand("a", "m", kind), _operand("b", "n", kind), *_scales(kind)]
    if kind.bias:
        inputs.append({"name": "bias", "dtype": "T", "shape": ["n"]})
    if kind.preshuffled:
        inputs[1]["layout"] = "any"
    out_shape = ["b", "m", "n"] if kind.batched else ["m", "n"]
    variables = {"Q": list(kind.quantized)} if kind.quantized else {"T": ["bf16"]}
    constraints = [PRESHUFFLED] if kind.preshuffled else []
    body = {
        "family": "gemm",
        "semantics": kind.semantics,
        "axes": axes,
        "dtype_variables": variables,
        "inputs": inputs,
        "outputs": [{"name": "c", "dtype": kind.out, "shape": out_shape}],
        "determinism": "unspecified",
        "reference": f"aiter's reference for {kind.entry} (torch, in the tuner; not mirrored here)",
        "flops": "2 * b * m * n * k" if kind.batched else GEMM_FLOPS,
        "constraints": constraints,
    }
    slug = gemm_slug(kind, n, k, batch)
    shape = f"{f'B {batch} · ' if kind.batched else ''}N {n} · K {k}"
    return build("OperationSpec", body, {
        "name": slug, "title": f"{kind.title} · {shape}",
        "description": f"{kind.semantics}. {SOURCE_WORDS}",
        "labels": {"imported_from": "aiter"},
    })
