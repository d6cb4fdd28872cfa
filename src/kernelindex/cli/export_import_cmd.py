"""``ki import kernelindex-export FILE``: the public KernelIndex site's catalog export."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from kernelindex.catalog.publish import PublishError
from kernelindex.cli.catalog_cmds import _mode, _progress, import_app
from kernelindex.cli.common import DatabaseOption, actor, console, fail, markup_safe, open_for_cli, print_json


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

    dry = _mode(dry_run, publish)
    catalog = open_for_cli(database)
    try:
        with _progress(as_json) as bar:
            task = bar.add_task("runs", total=None)
            report = import_export(catalog, FileTransport(file, MAX_EXPORT_FILE_BYTES), dry_run=dry, actor=actor(),
                                   only_source=source,
                                   progress=lambda done, total: bar.update(task, completed=done, total=total))
    except (ExportFormatError, InputFileError) as exc:
        fail(str(exc))
    except PublishError as exc:
        fail(f"nothing was published: {exc}")
    if as_json:
        print_json(report.to_json())
        return
    _print(report.to_json())


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
    kinds = Table("kind", "new", "existing", box=None)
    for kind in sorted(set(report["new"]) | set(report["existing"])):
        kinds.add_row(kind, f"{report['new'].get(kind, 0):,}", f"{report['existing'].get(kind, 0):,}")
    console.print(kinds)


def register(app: typer.Typer) -> None:
    """The command hangs off ``ki import``, which catalog_cmds registers; importing this module adds it."""
