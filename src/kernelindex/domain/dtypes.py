"""Canonical dtype names and their sizes; aliases users and sources write."""

from __future__ import annotations

DTYPE_BYTES: dict[str, float] = {
    "fp64": 8,
    "fp32": 4,
    "tf32": 4,
    "bf16": 2,
    "fp16": 2,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
    # Narrow formats sources name (KernelIndex export): fnuz = AMD's finite, no-negative-zero fp8.
    "fp8_e4m3fnuz": 1,
    "fp8_e5m2fnuz": 1,
    "fp8_e8m0": 1,
    "float4_e2m1fn_x2": 1,  # two fp4 values packed in one byte
    # One 4-bit element: half a byte (the scales travel as their own tensors).
    "nvfp4": 0.5,
    "mxfp4": 0.5,
    "int4": 0.5,  # one 4-bit integer element (aiter's torch.int4 weights)
}

# The datasheet rate a dtype's math runs at (GPU peaks are keyed by these classes).
PEAK_CLASS = {
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "fp8_e4m3fnuz": "fp8",
    "fp8_e5m2fnuz": "fp8",
    "float4_e2m1fn_x2": "fp4",
    "nvfp4": "fp4",
    "mxfp4": "fp4",
}

DTYPE_ALIASES = {
    "float64": "fp64",
    "double": "fp64",
    "torch.float64": "fp64",
    "float32": "fp32",
    "float": "fp32",
    "torch.float32": "fp32",
    "torch.float": "fp32",
    "bfloat16": "bf16",
    "torch.bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "torch.float16": "fp16",
    "torch.half": "fp16",
    "long": "int64",
    "torch.int64": "int64",
    "torch.long": "int64",
    "int": "int32",
    "torch.int32": "int32",
    "torch.int8": "int8",
    "torch.int4": "int4",
    "torch.float8_e4m3fn": "fp8_e4m3",
    "torch.float8_e4m3fnuz": "fp8_e4m3fnuz",
    "torch.float8_e5m2": "fp8_e5m2",
    "torch.float4_e2m1fn_x2": "float4_e2m1fn_x2",
}


def canonical_dtype(name: str) -> str | None:
    """'torch.bfloat16' / 'bfloat16' / 'BF16' → 'bf16'; None when unknown."""
    key = name.strip().lower()
    if key in DTYPE_BYTES:
        return key
    return DTYPE_ALIASES.get(key)


def peak_class(name: str) -> str:
    """The key of the GPU peak a dtype's math runs at: 'fp8_e4m3fnuz' → 'fp8', 'bf16' → 'bf16'."""
    return PEAK_CLASS.get(name, name)


def dtype_size(name: str) -> float:
    return DTYPE_BYTES[name]
