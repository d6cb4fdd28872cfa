"""Read the export: zstandard-compressed JSON Lines, one ``{"table", "row"}`` object per line."""

from __future__ import annotations

import io
import itertools
import json
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zstandard

# Tables the mapping reads; every other table is counted and skipped with its reason.
READ = ("sources", "projects", "operations", "operation_aliases", "workloads", "implementations", "artifacts",
        "benchmark_runs", "measurements")
NOT_IMPORTED = {
    "record_events": "that site's own record history (its ranking, not evidence)",
    "model_revisions": "serving domain (MLPerf Inference): out of scope",
    "serving_stack_revisions": "serving domain (MLPerf Inference): out of scope",
    "serving_configurations": "serving domain (MLPerf Inference): out of scope",
    "serving_workloads": "serving domain (MLPerf Inference): out of scope",
    "serving_runs": "serving domain (MLPerf Inference): out of scope",
    "serving_measurements": "serving domain (MLPerf Inference): out of scope",
}


# Limits, with wide headroom over the real export (3.1 MB compressed, 40,795 lines, 49 MB decompressed, the
# longest line 9.4 kB, 9 levels deep): see docs/reliability.md.
MAX_EXPORT_FILE_BYTES = 256 * 1024 * 1024  # the file as given, checked before it is read
MAX_DECOMPRESSED_BYTES = 1024 * 1024 * 1024
MAX_LINES = 1_000_000  # blank ones too: 32 KB of compressed newlines is billions of lines
MAX_LINE_BYTES = 1024 * 1024
MAX_DEPTH = 32
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_PIECE = 1024 * 1024
DOWNLOAD = "this is not a KernelIndex catalog export, or it is damaged: download it again"
# The fields the mapping reads on every row of a table, and their JSON types: a row without them is refused
# here, naming its line, instead of failing later.
_ID: dict[str, type] = {"id": str}
REQUIRED: dict[str, dict[str, type]] = {
    "sources": {**_ID, "slug": str}, "operations": _ID, "projects": _ID,
    "workloads": {**_ID, "operationId": str, "manifest": dict}, "implementations": {**_ID, "projectId": str},
    "artifacts": {"contentDigest": str}, "measurements": {**_ID, "runId": str},
    "operation_aliases": {"operationId": str, "alias": str},
    "benchmark_runs": {**_ID, "sourceId": str, "workloadId": str, "implementationId": str, "manifest": dict,
                       "status": str, "protocolKey": str, "environmentKey": str, "hardwareModel": str},
}


class ExportFormatError(ValueError):
    """The file is not a catalog export; the message names the line and what was wrong."""


@dataclass
class ExportTables:
    rows: dict[str, list[dict]] = field(default_factory=lambda: defaultdict(list))
    other: Counter = field(default_factory=Counter)  # table → rows not read (skipped with a reason)

    def by_id(self, table: str) -> dict[str, dict]:
        return {row["id"]: row for row in self.rows[table]}


def open_lines(content: bytes) -> io.TextIOWrapper:
    """Decompress zstandard content (or pass plain JSON Lines through) as a text stream, without limits:
    for the maintainers' own tools over the trusted source export (derive.py). Imports use export_lines."""
    return io.TextIOWrapper(_decompressed(content), encoding="utf-8")


def _decompressed(content: bytes) -> io.BufferedReader:
    """Zstandard content (or plain JSON Lines) as a buffered byte stream, decompressed as it is read."""
    if content[:4] == ZSTD_MAGIC:
        return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(io.BytesIO(content)), _PIECE)
    return io.BufferedReader(io.BytesIO(content), _PIECE)


def export_lines(content: bytes, locator: str | Path = "<export>") -> Iterator[tuple[int, bytes]]:
    """(line number, line) of the export, decompressed as they are read and refused past the limits: a
    line is read only up to MAX_LINE_BYTES, the whole only up to MAX_DECOMPRESSED_BYTES and MAX_LINES."""
    stream, total = _decompressed(content), 0
    for number in itertools.count(1):
        try:
            line = stream.readline(MAX_LINE_BYTES + 1)
        except zstandard.ZstdError:
            raise ExportFormatError(f"{locator}:{number}: the zstandard stream is damaged here; {DOWNLOAD}") from None
        if not line:
            return
        total += len(line)
        if len(line) > MAX_LINE_BYTES:
            raise ExportFormatError(f"{locator}:{number}: the line is longer than {MAX_LINE_BYTES:,} bytes (a real "
                                    f"export's longest is under 10 kB); {DOWNLOAD}")
        if number > MAX_LINES or total > MAX_DECOMPRESSED_BYTES:
            raise ExportFormatError(f"{locator}:{number}: the export holds more than {MAX_LINES:,} lines or "
                                    f"{MAX_DECOMPRESSED_BYTES:,} bytes decompressed (a real one: 41,000 lines, "
                                    f"50 MB); {DOWNLOAD}")
        yield number, line


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether objects and arrays nest deeper than ``limit``, walked without recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _record(line: bytes, where: str) -> tuple[str, dict[str, Any]]:
    expected = "expected a JSON object with 'table' and 'row'"
    try:
        record = json.loads(line)
    except RecursionError:
        raise ExportFormatError(f"{where}: JSON nested deeper than {MAX_DEPTH} levels; {DOWNLOAD}") from None
    except ValueError as exc:  # invalid JSON, or not UTF-8
        raise ExportFormatError(f"{where}: not JSON ({str(exc)[:120]}); {expected}; {DOWNLOAD}") from None
    # Counting brackets is cheap: only a line with enough of them can nest too deep, so few lines are walked.
    if line.count(b"[") + line.count(b"{") > MAX_DEPTH and _deeper_than(record, MAX_DEPTH):
        raise ExportFormatError(f"{where}: JSON nested deeper than {MAX_DEPTH} levels; {DOWNLOAD}")
    if not isinstance(record, dict) or not isinstance(record.get("table"), str) or \
            not isinstance(record.get("row"), dict):
        raise ExportFormatError(f"{where}: not a catalog export line ({expected}); {DOWNLOAD}")
    return record["table"], record["row"]


def _check_row(table: str, row: dict[str, Any], where: str) -> None:
    for name, kind in REQUIRED.get(table, {}).items():
        if not isinstance(row.get(name), kind):
            what = "missing" if name not in row else f"not a {'JSON object' if kind is dict else 'string'}"
            raise ExportFormatError(f"{where}: the {table} row's field {name!r} is {what}; {DOWNLOAD}")


def read_export(content: bytes, locator: str | Path = "<export>") -> ExportTables:
    tables = ExportTables()
    for number, line in export_lines(content, locator):
        if not line.strip():
            continue
        where = f"{locator}:{number}"
        table, row = _record(line, where)
        if table in READ:
            _check_row(table, row, where)
            tables.rows[table].append(row)
        else:
            tables.other[table] += 1
    if not tables.rows["sources"]:
        raise ExportFormatError(f"{locator}: no 'sources' rows; is this a KernelIndex catalog export?")
    return tables
