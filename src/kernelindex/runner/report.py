"""Runner output that needs no torch: reading workload cases from an export, the results table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from kernelindex.domain.manifests import ManifestError, OperationSpec, WorkloadCase, digest_of, parse_manifest_text
from kernelindex.domain.units import format_duration


def workloads_from_file(path: Path, operation: OperationSpec) -> list[WorkloadCase]:
    wanted = digest_of(operation)
    found: list[WorkloadCase] = []
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            manifest = parse_manifest_text(line, f"{path.name} line {number}")
        except ManifestError:
            continue  # an export also holds kinds and versions this command does not need
        if isinstance(manifest, WorkloadCase) and manifest.spec.operation == wanted:
            found.append(manifest)
    return found


def print_results(console: Console, operation: str, rows: list[dict[str, Any]], skipped: dict[str, str]) -> None:
    table = Table(title=f"{operation}: verification results", title_justify="left")
    for column in ("case", "impl", "status", "median", "p20–p80", "do_bench", "host", "× floor", "rel. error"):
        table.add_column(column, justify="left" if column in ("case", "impl", "status") else "right")
    for r in rows:
        spread = f"{format_duration(r['p20_ns'])}–{format_duration(r['p80_ns'])}" if r["p20_ns"] else "—"
        ratio = f"{r['median_ns'] / r['floor_ns']:.2f}×" if r["median_ns"] and r["floor_ns"] else "—"
        error = f"{r['relative_error']:.2g}" if r["relative_error"] is not None else "—"
        table.add_row(Text(r["case"]), Text(r["implementation"]), Text(r["status"]), format_duration(r["median_ns"]),
                      spread,
                      format_duration(r["do_bench_ns"]), format_duration(r["host_ns"]), ratio, error)
    console.print(table)
    for adapter, reason in skipped.items():
        console.print(Text.assemble((f"skipped {adapter}:", "yellow"), f" {reason}"))
    for r in rows:
        if r["status"] != "passed":
            failed = f"{r['case']} {r['implementation']}: {r['status']}"
            console.print(Text.assemble((failed, "red"), f" {r['detail']}"))
