"""What ``ki import kernelbench`` runs and prints (the CLI builds the command from ``SOURCE.command``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from kernelindex.sources.base import FileTransport
from kernelindex.sources.kernelbench.importer import KernelBenchReport, import_kernelbench
from kernelindex.sources.kernelbench.read import KernelBenchFormatError
from kernelindex.sources.printout import new_and_existing

if TYPE_CHECKING:
    from kernelindex.catalog.db import Catalog

INPUT_ERRORS = (KernelBenchFormatError,)


def run(catalog: Catalog, *, dry_run: bool, actor: str, progress: Callable[[int, int], None],
        file: Path | None = None) -> KernelBenchReport:
    return import_kernelbench(catalog, FileTransport(file) if file else None, dry_run=dry_run, actor=actor)


def printout(imported: KernelBenchReport, safe: Callable[[Any], Any]) -> list[Any]:
    report: dict[str, Any] = imported.to_json()
    verb = "published" if report["published"] else "dry run — nothing written"
    refused = Table("refused entries", "reason", box=None)
    for reason, count in report["refused"].items():
        refused.add_row(f"{count:,}", reason)
    return [f"[bold]KernelBench[/] ({verb})\nsnapshot {report['snapshot_digest']}",
            f"{report['entries']:,} timing entries: {report['timed_runs']:,} timed runs, "
            f"{report['failed_runs']:,} failed runs (shown, never ranked), {report['refused_total']:,} refused; "
            f"{report['operations']:,} operations, {report['workloads']:,} workloads",
            refused,
            *(f"suspect pairing {level}: {why}" for level, why in report["suspect_pairings"].items()),
            new_and_existing(report["new"], report["existing"])]
