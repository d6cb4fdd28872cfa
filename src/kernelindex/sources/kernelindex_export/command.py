"""What ``ki import kernelindex-export FILE`` runs and prints (the CLI builds the command from ``SOURCE.command``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from kernelindex.sources.base import FileTransport, InputFileError
from kernelindex.sources.kernelindex_export.importer import ExportReport, import_export
from kernelindex.sources.kernelindex_export.read import MAX_EXPORT_FILE_BYTES, ExportFormatError
from kernelindex.sources.printout import new_and_existing

if TYPE_CHECKING:
    from kernelindex.catalog.db import Catalog

INPUT_ERRORS = (ExportFormatError, InputFileError)


def run(catalog: Catalog, *, dry_run: bool, actor: str, progress: Callable[[int, int], None], file: Path,
        source: str | None = None) -> ExportReport:
    return import_export(catalog, FileTransport(file, MAX_EXPORT_FILE_BYTES), dry_run=dry_run, actor=actor,
                         only_source=source, progress=progress)


def printout(imported: ExportReport, safe: Callable[[Any], Any]) -> list[Any]:
    report = safe(imported.to_json())  # table names, sources and reasons come from the file
    verb = "published" if report["published"] else "dry run — nothing written"
    out: list[Any] = [f"[bold]KernelIndex catalog export[/] ({verb})\nsnapshot {report['snapshot_digest']}"]
    for slug, entry in report["sources"].items():
        table = Table("table", "discovered", "published", "refused", "skipped (reason)", "failed evidence",
                      title=f"{slug}: {entry['decision']}", title_justify="left", box=None)
        for name, counts in entry["tables"].items():
            skipped = "; ".join(f"{n:,} {reason}" for reason, n in counts["skipped"].items()) or "0"
            table.add_row(name, f"{counts['discovered']:,}", f"{counts['published']:,}", f"{counts['refused']:,}",
                          skipped, f"{counts['failed_evidence']:,}")
        out.append(table)
    out += [f"skipped table {name}: {entry['rows']:,} rows — {entry['reason']}"
            for name, entry in report["not_imported"].items()]
    return [*out, new_and_existing(report["new"], report["existing"])]
