"""Parse aiter's tuned tables: one row = one shape on one GPU with the kernel the tuner chose.

Three families, told apart by header: GEMM (``M,N,K`` or ``B,M,N,K``), fused MoE (``token,…``) and
the Gated DeltaNet chunk kernel (``T_flat,…``). Columns are read by name, so the older formats
(no ``gfx`` column; ``errRatio`` or ``err_ratio``; no ``libtype``) parse alike. A row this module
cannot read is returned as a Rejected with the reason, never guessed."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

FIELD_COUNT = "the row has a different number of fields than its header"
NO_TIME = "no usable time: us is missing, not a number, or not above zero"


@dataclass(frozen=True)
class Rejected:
    line: int
    reason: str


@dataclass(frozen=True)
class Row:
    """One table row: its family, where it came from, the GPU it names and its values by column."""

    family: str  # "gemm" | "moe" | "gdn"
    file: str
    line: int
    gfx: str | None
    cu_num: int | None
    us: float
    values: dict[str, str] = field(repr=False)

    def get(self, column: str) -> str | None:
        value = self.values.get(column)
        return value if value not in (None, "") else None


def family_of(header: list[str]) -> str | None:
    columns = {c.lower() for c in header}
    if "token" in columns and "model_dim" in columns:
        return "moe"
    if "t_flat" in columns:
        return "gdn"
    if {"m", "n", "k", "us", "kernelname"} <= columns:
        return "gemm"
    return None


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except ValueError:
        return None


def _time(value: str | None) -> float | None:
    try:
        us = float(value) if value is not None else math.nan
    except ValueError:
        return None
    return us if math.isfinite(us) and us > 0 else None


def parse_table(name: str, content: bytes) -> Iterator[Row | Rejected]:
    """Rows of one file; the header is line 1, so the first row is line 2."""
    reader = csv.reader(io.StringIO(content.decode("utf-8")))
    header = next(reader, None)
    if header is None:
        return
    family = family_of(header)
    keys = [c if c in ("M", "N", "K", "B") else c.lower() for c in header]
    for line, fields in enumerate(reader, start=2):
        if not fields:
            continue
        if family is None:
            yield Rejected(line, f"unknown table format (header {','.join(header[:6])},…)")
            continue
        if len(fields) != len(keys):
            yield Rejected(line, FIELD_COUNT)
            continue
        values = {_upper(k): v.strip() for k, v in zip(keys, fields, strict=True)}
        us = _time(values.get("us"))
        if us is None:
            yield Rejected(line, NO_TIME)
            continue
        gfx = values.get("gfx") or None
        yield Row(family, name, line, gfx, _int(values.get("cu_num")), us, values)


def _upper(key: str) -> str:
    """Shape columns by one spelling: the batched mxscale table writes ``b,m,n,k``."""
    return key.upper() if key in ("b", "m", "n", "k") else key
