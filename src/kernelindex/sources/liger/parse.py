"""Parse the Liger CSV into checked rows; anything malformed is rejected with a reason, never guessed."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kernelindex.domain.canonical import MAX_SAFE_INTEGER, ManifestSyntaxError, strict_json_loads
from kernelindex.domain.instants import ImplausibleInstant, check_year
from kernelindex.domain.numbers import parse_number
from kernelindex.domain.units import NS_PER_UNIT

COLUMNS = (
    "kernel_name",
    "kernel_provider",
    "kernel_operation_mode",
    "metric_name",
    "metric_unit",
    "x_name",
    "x_label",
    "x_value",
    "y_value_50",
    "y_value_20",
    "y_value_80",
    "extra_benchmark_config_str",
    "gpu_name",
    "timestamp",
    "liger_version",
)
# "no-grad-forward" (the 2026 scripts): the forward call timed inside torch.no_grad(), so no autograd
# graph is recorded and a fused loss may skip the gradient work its "forward" does (Liger's
# cross-entropy writes the logits' gradient during forward): its own timed region, never "forward".
MODES = {"forward": "forward", "backward": "backward", "full": "forward+backward", "no-grad-forward": "forward-no-grad"}
# metric_name → (metric, the unit the source writes): speed in ms; memory in "MB" that is really
# MiB (torch.cuda.max_memory_allocated() / 2**20, the process-wide peak).
METRICS = {"speed": ("latency", "ms"), "memory": ("peak_memory", "MB")}


class CsvFileError(ValueError):
    """The file as a whole cannot be read (encoding, size); the message says where and why."""


class HeaderError(CsvFileError):
    pass


MAX_CSV_BYTES = 256 * 1024 * 1024  # the bundled snapshot is 1.1 MB
# A row whose 15 fields equal an earlier row's: one measurement written twice, imported once.
DUPLICATE_ROW = "duplicate row: identical to an earlier row, imported once"


@dataclass(frozen=True)
class LigerRow:
    line: int  # line number in the file (header = 1)
    kernel: str
    provider: str
    mode: str  # forward | backward | forward+backward | forward-no-grad
    x_name: str
    x_value: int | str  # a name (a model config such as llama_2_7b) when the source swept configs
    y50: float
    y20: float
    y80: float
    raw: dict[str, str]
    config: dict
    config_text: str
    gpu_name: str
    timestamp: datetime  # naive, as the source wrote it
    liger_version: str
    metric: str = "latency"  # latency (ms → ns) | peak_memory (MiB)


@dataclass(frozen=True)
class Rejected:
    line: int
    reason: str


def _number(text: str, column: str) -> float:
    value = parse_number(text, column)  # NumberError (a ValueError) names the column
    if value <= 0:
        raise ValueError(f"{column} is {text}: a time must be positive")
    ns = value * NS_PER_UNIT["ms"]
    if ns < 1:
        raise ValueError(f"{column} is {text} ms, below 1 ns: not a measurable GPU time")
    if ns > MAX_SAFE_INTEGER:
        raise ValueError(f"{column} is {text} ms, over {MAX_SAFE_INTEGER:,} ns (104 days)")
    return float(value)


# A swept model configuration (llama_2_7b, qwen2.5_14b): starts with a letter, so never a number.
_CONFIG_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,119}")


def _x_value(text: str) -> int | str:
    if _CONFIG_NAME.fullmatch(text):
        return text  # a named configuration; the curated mapping resolves it or skips the row
    value = parse_number(text, "x_value")
    if value != value.to_integral_value() or value <= 0:
        raise ValueError(f"x_value {text} is not a positive integer")
    if value > MAX_SAFE_INTEGER:
        raise ValueError(f"x_value {text} is over {MAX_SAFE_INTEGER:,}")
    return int(value)


def _check_row(line: int, values: dict[str, str]) -> LigerRow | Rejected:
    if values["metric_name"] not in METRICS:
        return Rejected(line, f"unknown metric_name {values['metric_name']!r}")
    metric, unit = METRICS[values["metric_name"]]
    if values["metric_unit"] != unit:
        return Rejected(line, f"{values['metric_name']} row with unit {values['metric_unit']!r}, expected {unit}")
    if values["kernel_operation_mode"] not in MODES:
        return Rejected(line, f"kernel_operation_mode {values['kernel_operation_mode']!r} has no timed region "
                        "in KernelIndex (forward, backward, full, no-grad-forward)")
    try:
        y50, y20, y80 = (_number(values[c], c) for c in ("y_value_50", "y_value_20", "y_value_80"))
        x_value = _x_value(values["x_value"])
    except ValueError as exc:
        return Rejected(line, str(exc))
    if not (y20 <= y50 <= y80):
        return Rejected(line, "quantiles out of order (expected y_value_20 ≤ y_value_50 ≤ y_value_80)")
    try:
        config = strict_json_loads(values["extra_benchmark_config_str"])
    except ManifestSyntaxError as exc:
        return Rejected(line, f"bad JSON in extra_benchmark_config_str: {exc}")
    except json.JSONDecodeError:
        return Rejected(line, "bad JSON in extra_benchmark_config_str")
    if not isinstance(config, dict):
        return Rejected(line, "extra_benchmark_config_str is not a JSON object")
    try:
        timestamp = check_year(datetime.strptime(values["timestamp"], "%Y-%m-%d %H:%M:%S"), "timestamp")
    except ImplausibleInstant as exc:
        return Rejected(line, str(exc))
    except ValueError:
        return Rejected(line, "timestamp is not 'YYYY-MM-DD HH:MM:SS'")
    return LigerRow(
        line=line,
        kernel=values["kernel_name"],
        provider=values["kernel_provider"],
        mode=MODES[values["kernel_operation_mode"]],
        x_name=values["x_name"],
        x_value=x_value,
        y50=y50,
        y20=y20,
        y80=y80,
        raw={
            "y_value_50": values["y_value_50"],
            "y_value_20": values["y_value_20"],
            "y_value_80": values["y_value_80"],
            "unit": values["metric_unit"],
        },
        config=config,
        config_text=values["extra_benchmark_config_str"],
        gpu_name=values["gpu_name"],
        timestamp=timestamp,
        liger_version=values["liger_version"],
        metric=metric,
    )


def _decode(content: bytes) -> str:
    if len(content) > MAX_CSV_BYTES:
        raise CsvFileError(f"the file is {len(content):,} bytes, over the {MAX_CSV_BYTES:,}-byte limit")
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = content.count(b"\n", 0, exc.start) + 1
        raise CsvFileError(
            f"not UTF-8: byte 0x{content[exc.start]:02x} at offset {exc.start:,} (line {line}); save the file as UTF-8"
        ) from None


def _records(reader: Any) -> Iterator[tuple[int, list[str] | str]]:
    """(line, fields) per record, or (line, reason) for one the csv module cannot read."""
    while True:
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:  # e.g. a field over csv.field_size_limit() (131,072 characters)
            yield reader.line_num, f"unreadable row: {exc}"
            continue
        yield reader.line_num, record


def parse_csv(content: bytes) -> Iterator[LigerRow | Rejected]:
    text = _decode(content)
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None or tuple(header) != COLUMNS:
        missing = [c for c in COLUMNS if header is None or c not in header]
        extra = [c for c in (header or []) if c not in COLUMNS]
        raise HeaderError(
            "the CSV header does not match Liger-Kernel's 15 columns"
            + (f"; missing: {', '.join(missing)}" if missing else "")
            + (f"; unexpected: {', '.join(extra)}" if extra else "")
        )
    seen: set[tuple[str, ...]] = set()
    for line, record in _records(reader):
        if isinstance(record, str):
            yield Rejected(line, record)
            continue
        if not record or record == [""]:
            continue
        if len(record) != len(COLUMNS):
            yield Rejected(line, f"ragged row: {len(record)} fields, expected {len(COLUMNS)}")
            continue
        if (fields := tuple(record)) in seen:
            yield Rejected(line, DUPLICATE_ROW)
            continue
        seen.add(fields)
        yield _check_row(line, dict(zip(COLUMNS, record, strict=True)))
