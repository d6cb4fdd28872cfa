"""``ki import aiter``: AMD aiter's tuned kernel tables (shipped with the package, or a folder)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from kernelindex.cli.catalog_cmds import import_app
from kernelindex.cli.common import DatabaseOption, actor, console
from kernelindex.cli.import_flow import print_new_and_existing, run_import


@import_app.command("aiter")
def import_aiter_cmd(
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the report; write nothing."),
    publish: bool = typer.Option(False, "--publish", help="Publish in one transaction."),
    path: Path = typer.Option(None, "--path", exists=True,
                              help="A folder of aiter tables (aiter/configs of a checkout) or an archive "
                                   "with its PROVENANCE.json beside it (default: the shipped tables)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable report."),
    database: str = DatabaseOption,
) -> None:
    """Import AMD aiter's tuned tables: GEMM (bf16, a8w8 per-token, block-scale a8w8/a4w4,
    pre-shuffled, batched), fused MoE and Gated DeltaNet. One run per row, timed by aiter's tuner
    (mean of 101, profiler device time: metric latency:mean:ns, never ranked with medians)."""
    from kernelindex.sources.aiter import import_aiter
    from kernelindex.sources.aiter.archive import ArchiveError

    run_import(dry_run=dry_run, publish=publish, database=database, as_json=as_json, counting="tables",
               source_errors=(ArchiveError, OSError), print_report=_print,
               importer=lambda catalog, dry, progress: import_aiter(catalog, path, dry_run=dry, actor=actor(),
                                                                    progress=progress))


def _print(report: dict) -> None:
    verb = "published" if report["published"] else "dry run — nothing written"
    console.print(f"[bold]AMD aiter tuned tables[/] ({verb})\nsnapshot {report['snapshot_digest']}\n"
                  f"{escape(str(report['locator']))}")
    console.print(f"files {report['files']} · rows read {report['rows_read']:,} · accepted {report['accepted']:,} "
                  f"· skipped {report['skipped_total']:,}")
    families = Table("family", "rows imported", box=None)
    for family, rows in report["accepted_by_family"].items():
        families.add_row(family, f"{rows:,}")
    console.print(families)
    gpus = Table("GPU (as the rows prove it)", "rows", box=None)
    for gpu, rows in report["gpus"].items():
        gpus.add_row(escape(gpu), f"{rows:,}")
    console.print(gpus)
    if report["skipped"]:
        skipped = Table("skipped because", "rows", "first rows", box=None)
        for reason, entry in report["skipped"].items():
            skipped.add_row(escape(reason), f"{entry['rows']:,}", escape(", ".join(entry["first"][:3])))
        console.print(skipped)
    print_new_and_existing(report["new"], report["existing"])


def register(app: typer.Typer) -> None:
    """The command hangs off ``ki import``, which catalog_cmds registers; importing this module adds it."""
