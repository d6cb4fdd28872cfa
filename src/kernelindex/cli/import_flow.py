"""The flow every ``ki import SOURCE`` command shares: --dry-run or --publish, a progress bar, the
source's own errors and a failed publication said in one line, then the report as JSON or tables."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kernelindex.catalog.publish import PublishError
from kernelindex.cli.common import fail, open_for_cli, print_json
from kernelindex.cli.console import console

if TYPE_CHECKING:
    from kernelindex.catalog.db import Catalog

ProgressCallback = Callable[[int, int], None]


class ImportedReport(Protocol):
    def to_json(self) -> dict[str, Any]: ...


def dry_run_mode(dry_run: bool, publish: bool) -> bool:
    """Whether this is a dry run; exactly one of --dry-run and --publish must be given."""
    if dry_run == publish:
        fail("say either --dry-run (report only, writes nothing) or --publish (write)", code=2)
    return dry_run


def progress_bar(quiet: bool) -> Progress:
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=quiet,
    )


def run_import(
    *,
    dry_run: bool,
    publish: bool,
    database: str,
    as_json: bool,
    counting: str,
    source_errors: tuple[type[Exception], ...],
    importer: Callable[[Catalog, bool, ProgressCallback], ImportedReport],
    print_report: Callable[[Any], None],
) -> None:
    """Import with ``importer(catalog, dry_run, progress)``; the bar counts ``counting`` (tables, runs …).
    A source error is printed as it is; a refused publication says that nothing was published."""
    dry = dry_run_mode(dry_run, publish)
    catalog = open_for_cli(database)
    try:
        with progress_bar(as_json) as bar:
            task = bar.add_task(counting, total=None)
            report = importer(catalog, dry, lambda done, total: bar.update(task, completed=done, total=total))
    except source_errors as exc:
        fail(str(exc))
    except PublishError as exc:
        fail(f"nothing was published: {exc}")
    if as_json:
        print_json(report.to_json())
        return
    print_report(report)
