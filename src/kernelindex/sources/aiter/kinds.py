"""Read what a row measures: its GEMM kind and dtypes, its MoE or GDN key, and the library of the
kernel the tuner chose. Every rule is stated; a row no rule covers raises RowProblem (skipped with
the reason)."""

from __future__ import annotations

import functools
from pathlib import PurePath

from kernelindex.domain.dtypes import canonical_dtype
from kernelindex.sources.aiter.moe_gdn import GdnKey, MoeKey
from kernelindex.sources.aiter.operations import GEMM_KINDS, GemmKind
from kernelindex.sources.aiter.rows import Row

# aiter/utility/dtypes.py: aiter's fp8 is float8_e4m3fnuz on gfx942 and float8_e4m3fn on gfx950;
# tables that do not record their fp8 dtype (the block-scale ones) used that one.
AITER_FP8 = {"gfx942": "fp8_e4m3fnuz", "gfx950": "fp8_e4m3"}
LIBRARIES = {"asm": "asm", "ck": "ck", "cktile": "ck-tile", "hipblaslt": "hipBLASLt", "triton": "triton",
             "flydsl": "FlyDSL", "opus": "opus", "torch": "torch", "skinny": "skinny"}
LANGUAGES = {"asm": "other", "ck": "cpp", "ck-tile": "cpp", "hipBLASLt": "other", "triton": "triton",
             "FlyDSL": "other", "opus": "other", "torch": "python", "skinny": "cpp"}
TRUE = {"true", "1"}
MAX_SIZE = 2**31  # one shape size (a tensor's element count is checked against 2^53 where it is built)
FALSE = {"false", "0"}


class RowProblem(ValueError):
    """A row no rule covers; the message is the skip reason."""


def _flag(row: Row, column: str) -> bool:
    value = (row.get(column) or "").lower()
    if value in TRUE | FALSE:
        return value in TRUE
    raise RowProblem(f"column {column} is {row.get(column)!r}, not a boolean")


def _dtype(row: Row, column: str) -> str:
    value = row.get(column)
    dtype = canonical_dtype(value) if value else None
    if dtype is None:
        raise RowProblem(f"column {column} names {value!r}, a dtype KernelIndex does not know")
    return dtype


def library_of(libtype: str | None, kernel: str) -> str:
    """The kernel's library: the table's libtype; tables without one (the CK tuners' a8w8 and a4w4
    tables) list CK instances by name and assembly kernels by their mangled ``_ZN5aiter`` symbol."""
    if libtype:
        library = LIBRARIES.get(libtype.lower())
        if library is None:
            raise RowProblem(f"libtype {libtype!r} is not a library KernelIndex knows")
        return library
    return "asm" if kernel.startswith("_ZN5aiter") else "ck"


@functools.lru_cache(maxsize=256)
def _file_name(file: str) -> str:
    return PurePath(file).name  # one per table, asked for each of its rows


def gemm_kind(row: Row) -> GemmKind:
    name = _file_name(row.file)
    if "bias" in row.values:
        return _bf16_kind(row)
    if "batched" in name:
        if name.startswith("bf16_"):
            return GEMM_KINDS["batched-gemm-bf16"]
        raise RowProblem("batched quantized GEMM: the table records neither the quantized dtype nor the "
                         "scale layout (not guessed)")
    for marker, prefix in (("a4w4_blockscale", "gemm-a4w4-blockscale"),
                           ("a8w8_blockscale_bpreshuffle", "gemm-a8w8-blockscale-bpreshuffle"),
                           ("a8w8_blockscale", "gemm-a8w8-blockscale"),
                           ("a8w8_bpreshuffle", "gemm-a8w8-rowwise-bpreshuffle"), ("a8w8", "gemm-a8w8-rowwise")):
        if marker in name:
            return GEMM_KINDS[prefix]
    raise RowProblem(f"GEMM table {name}: its file name names no GEMM family KernelIndex maps")


def _bf16_kind(row: Row) -> GemmKind:
    if _dtype(row, "dtype") != "bf16":
        raise RowProblem(f"bf16 GEMM table row with input dtype {row.get('dtype')!r}")
    if _flag(row, "scaleab") or _flag(row, "bpreshuffle"):
        raise RowProblem("bf16 GEMM with scaleAB or bpreshuffle set: a variant not mapped")
    out, bias = _dtype(row, "outdtype"), _flag(row, "bias")
    if out == "bf16":
        return GEMM_KINDS["gemm-bf16-bias" if bias else "gemm-bf16"]
    if out == "fp32" and not bias:
        return GEMM_KINDS["gemm-bf16-out-fp32"]
    raise RowProblem(f"bf16 GEMM with output {out} and bias {bias}: a variant not mapped")


def gemm_dtypes(row: Row, kind: GemmKind) -> dict[str, str]:
    if not kind.quantized:
        return {"T": "bf16"}
    if kind.quantized == ("float4_e2m1fn_x2",):
        return {"Q": "float4_e2m1fn_x2"}
    if row.get("q_dtype_w"):
        dtype = _dtype(row, "q_dtype_w")
    elif row.gfx in AITER_FP8 and "int8" not in kind.quantized:
        dtype = AITER_FP8[row.gfx]
    else:
        raise RowProblem(f"the quantized dtype is not recorded and aiter's fp8 rule does not cover gfx {row.gfx!r}")
    if dtype not in kind.quantized:
        raise RowProblem(f"quantized dtype {dtype} is not one {kind.prefix} takes")
    return {"Q": dtype}


def _number(row: Row, column: str) -> int:
    value = row.get(column)
    try:
        number = int(value) if value is not None else 0
    except ValueError:
        number = 0
    if not 1 <= number <= MAX_SIZE:
        raise RowProblem(f"column {column} is {value!r}, not a positive integer up to {MAX_SIZE:,}")
    return number


def gemm_shape(row: Row, kind: GemmKind) -> tuple[int, int, int, int | None]:
    batch = _number(row, "B") if kind.batched else None
    return _number(row, "M"), _number(row, "N"), _number(row, "K"), batch


def _enum(row: Row, column: str, prefix: str) -> str:
    value = row.get(column) or ""
    if not value.startswith(prefix):
        raise RowProblem(f"column {column} is {value!r}, not an aiter {prefix.rstrip('.')}")
    return value.removeprefix(prefix).lower().replace("_", "-")


def moe_key(row: Row) -> MoeKey:
    for column in ("xbf16", "flat"):  # tuner flags: present in the newer tables, 0 or 1
        if row.get(column) is not None and row.get(column) not in ("0", "1"):
            raise RowProblem(f"column {column} is {row.get(column)!r}: the row's fields are shifted")
    return MoeKey(
        activation=_enum(row, "act_type", "ActivationType."), quant=_enum(row, "q_type", "QuantType."),
        dtype=_dtype(row, "dtype"), q_a=_dtype(row, "q_dtype_a"), q_w=_dtype(row, "q_dtype_w"),
        gate_up=_flag(row, "use_g1u1"), weight_in_stage1=_flag(row, "doweight_stage1"),
        model_dim=_number(row, "model_dim"), inter_dim=_number(row, "inter_dim"),
        experts=_number(row, "expert"), topk=_number(row, "topk"),
    )


def gdn_key(row: Row) -> GdnKey:
    if _dtype(row, "dtype") != "bf16":
        raise RowProblem(f"GDN row with dtype {row.get('dtype')!r}: only bf16 is mapped")
    return GdnKey(k=_number(row, "K"), v=_number(row, "v"), chunk=_number(row, "bt"), heads=_number(row, "h"),
                  k_heads=_number(row, "hg"), varlen=_flag(row, "is_varlen"), initial_state=_flag(row, "use_h0"),
                  final_state=_flag(row, "store_fs"), snapshot_bf16=_flag(row, "snapshot_bf16"),
                  state_bf16=_flag(row, "state_bf16"))


def gdn_axes(row: Row) -> dict[str, int]:
    return {"t": _number(row, "t_flat"), "n": _number(row, "N"), "total_chunks": _number(row, "total_chunks")}
