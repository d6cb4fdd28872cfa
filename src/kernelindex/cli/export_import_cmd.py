"""``ki import kernelindex-export FILE``: the public KernelIndex site's catalog export."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from kernelindex.cli.catalog_cmds import import_app
from kernelindex.cli.common import DatabaseOption, actor, console, markup_safe
from kernelindex.cli.import_flow import print_new_and_existing, run_import


@import_app.command("kernelindex-export")
def import_kernelindex_export_cmd(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="The export (.jsonl.zst or .jsonl)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the report; write nothing."),
    publish: bool = typer.Option(False, "--publish", help="Publish, one transaction per source."),
    source: str = typer.Option(None, "--source", help="Import only this source (e.g. flashinfer-bench)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable report."),
    database: str = DatabaseOption,
) -> None:
    """Import FlashInfer-Bench and GPU MODE KernelBot rows from a KernelIndex catalog export, under
    the source policy: SOL-ExecBench rows are refused, serving tables and record history skipped."""
    from kernelindex.sources.base import FileTransport, InputFileError
    from kernelindex.sources.kernelindex_export import import_export
    from kernelindex.sources.kernelindex_export.read import MAX_EXPORT_FILE_BYTES, ExportFormatError

    run_import(dry_run=dry_run, publish=publish, database=database, as_json=as_json, counting="runs",
               source_errors=(ExportFormatError, InputFileError), print_report=_print,
               importer=lambda catalog, dry, progress: import_export(
                   catalog, FileTransport(file, MAX_EXPORT_FILE_BYTES), dry_run=dry, actor=actor(),
                   only_source=source, progress=progress))


def _print(report: dict) -> None:
    report = markup_safe(report)  # table names, sources and reasons come from the file
    verb = "published" if report["published"] else "dry run — nothing written"
    console.print(f"[bold]KernelIndex catalog export[/] ({verb})\nsnapshot {report['snapshot_digest']}")
    for slug, entry in report["sources"].items():
        table = Table("table", "discovered", "published", "refused", "skipped (reason)", "failed evidence",
                      title=f"{slug}: {entry['decision']}", title_justify="left", box=None)
        for name, counts in entry["tables"].items():
            skipped = "; ".join(f"{n:,} {reason}" for reason, n in counts["skipped"].items()) or "0"
            table.add_row(name, f"{counts['discovered']:,}", f"{counts['published']:,}", f"{counts['refused']:,}",
                          skipped, f"{counts['failed_evidence']:,}")
        console.print(table)
    for name, entry in report["not_imported"].items():
        console.print(f"skipped table {name}: {entry['rows']:,} rows — {entry['reason']}")
    print_new_and_existing(report["new"], report["existing"])


def register(app: typer.Typer) -> None:
    """The command hangs off ``ki import``, which catalog_cmds registers; importing this module adds it."""
