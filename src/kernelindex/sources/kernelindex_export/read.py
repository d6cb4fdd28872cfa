"""Read the export: zstandard-compressed JSON Lines, one ``{"table", "row"}`` object per line."""

from __future__ import annotations

import io
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

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


class ExportFormatError(ValueError):
    """The file is not a catalog export; the message names the line and what was wrong."""


@dataclass
class ExportTables:
    rows: dict[str, list[dict]] = field(default_factory=lambda: defaultdict(list))
    other: Counter = field(default_factory=Counter)  # table → rows not read (skipped with a reason)

    def by_id(self, table: str) -> dict[str, dict]:
        return {row["id"]: row for row in self.rows[table]}


def open_lines(content: bytes) -> io.TextIOWrapper:
    """Decompress zstandard content (or pass plain JSON Lines through) as a text stream."""
    if content[:4] == b"\x28\xb5\x2f\xfd":
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(content))
        return io.TextIOWrapper(reader, encoding="utf-8")
    return io.TextIOWrapper(io.BytesIO(content), encoding="utf-8")


def read_export(content: bytes, locator: str | Path = "<export>") -> ExportTables:
    tables = ExportTables()
    for number, line in enumerate(open_lines(content), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            table, row = record["table"], record["row"]
        except (json.JSONDecodeError, KeyError, TypeError):
            raise ExportFormatError(
                f"{locator}:{number}: not a catalog export line (expected a JSON object with 'table' and 'row')"
            ) from None
        if table in READ:
            tables.rows[table].append(row)
        else:
            tables.other[table] += 1
    if not tables.rows["sources"]:
        raise ExportFormatError(f"{locator}: no 'sources' rows; is this a KernelIndex catalog export?")
    return tables
