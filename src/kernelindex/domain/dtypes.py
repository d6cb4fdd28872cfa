"""Canonical dtype names and their sizes; aliases users and sources write."""

from __future__ import annotations

DTYPE_BYTES = {
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
}


def canonical_dtype(name: str) -> str | None:
    """'torch.bfloat16' / 'bfloat16' / 'BF16' → 'bf16'; None when unknown."""
    key = name.strip().lower()
    if key in DTYPE_BYTES:
        return key
    return DTYPE_ALIASES.get(key)


def dtype_size(name: str) -> int:
    return DTYPE_BYTES[name]
