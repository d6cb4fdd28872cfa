"""``ki import kernelbench``: KernelBench's problems and baseline timings (the shipped copy by default)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from kernelindex.cli.catalog_cmds import import_app
from kernelindex.cli.common import DatabaseOption, actor, console
from kernelindex.cli.import_flow import print_new_and_existing, run_import


@import_app.command("kernelbench")
def import_kernelbench_cmd(
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the report; write nothing."),
    publish: bool = typer.Option(False, "--publish", help="Publish in one transaction."),
    file: Path = typer.Option(None, "--file", exists=True, dir_okay=False,
                              help="A file made by scripts/derive-kernelbench (default: the shipped one)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable report."),
    database: str = DatabaseOption,
) -> None:
    """Import KernelBench (ScalingIntelligence/KernelBench, MIT): levels 1-3 as operations (one per
    problem semantics, one workload per problem file) and every baseline-timing entry as a run of
    PyTorch's configuration on the GPU the entry names — or refused, with its reason (no hardware,
    level 4/5, a file whose pairing with its problem set fails the physics check)."""
    from kernelindex.sources.base import FileTransport
    from kernelindex.sources.kernelbench import import_kernelbench
    from kernelindex.sources.kernelbench.read import KernelBenchFormatError

    run_import(dry_run=dry_run, publish=publish, database=database, as_json=as_json, counting="entries",
               source_errors=(KernelBenchFormatError,), print_report=_print,
               importer=lambda catalog, dry, _progress: import_kernelbench(
                   catalog, FileTransport(file) if file else None, dry_run=dry, actor=actor()))


def _print(report: dict) -> None:
    verb = "published" if report["published"] else "dry run — nothing written"
    console.print(f"[bold]KernelBench[/] ({verb})\nsnapshot {report['snapshot_digest']}")
    console.print(f"{report['entries']:,} timing entries: {report['timed_runs']:,} timed runs, "
                  f"{report['failed_runs']:,} failed runs (shown, never ranked), {report['refused_total']:,} refused; "
                  f"{report['operations']:,} operations, {report['workloads']:,} workloads")
    refused = Table("refused entries", "reason", box=None)
    for reason, count in report["refused"].items():
        refused.add_row(f"{count:,}", reason)
    console.print(refused)
    for level, why in report["suspect_pairings"].items():
        console.print(f"suspect pairing {level}: {why}")
    print_new_and_existing(report["new"], report["existing"])


def register(app: typer.Typer) -> None:
    """The command hangs off ``ki import``, which catalog_cmds registers; importing this module adds it."""
