"""What ``ki import liger`` runs and prints (the CLI builds the command from ``SOURCE.command``): the bundled
files by default, one publication each, or the one CSV given."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table

from kernelindex.catalog.publish import PublishError
from kernelindex.sources.base import FileTransport, ImportReport, InputFileError, combined_json
from kernelindex.sources.liger.importer import bundled_csv_paths, import_liger
from kernelindex.sources.liger.parse import MAX_CSV_BYTES, CsvFileError
from kernelindex.sources.printout import new_and_existing

if TYPE_CHECKING:
    from kernelindex.catalog.db import Catalog


class LigerFileError(ValueError):
    """A file that could not be read or published, named with its path."""


INPUT_ERRORS = (InputFileError, LigerFileError)


@dataclass(frozen=True)
class LigerImport:
    reports: list[ImportReport]  # one per file, in import order
    one_file: bool  # --file: the file's own report; else the totals with each file's report

    def to_json(self) -> dict[str, Any]:
        return self.reports[0].to_json() if self.one_file else combined_json(self.reports)


def run(catalog: Catalog, *, dry_run: bool, actor: str, progress: Callable[[int, int], None],
        file: Path | None = None) -> LigerImport:
    reports = []
    for path in [file] if file else bundled_csv_paths():
        try:
            reports.append(import_liger(catalog, FileTransport(path, MAX_CSV_BYTES), dry_run=dry_run, actor=actor,
                                        progress=progress))
        except CsvFileError as exc:
            raise LigerFileError(f"{path}: {exc}") from exc
        except PublishError as exc:
            raise LigerFileError(f"{path}: nothing was published from this file: {exc}") from exc
    return LigerImport(reports, file is not None)


def printout(imported: LigerImport, safe: Callable[[Any], Any]) -> list[Any]:
    return [line for report in imported.reports for line in _report(report)]


def _report(report: ImportReport) -> list[Any]:
    verb = "published" if report.published else "dry run — nothing written"
    out: list[Any] = [f"[bold]{escape(report.source)}[/] ({verb})\nsnapshot {report.snapshot_digest}\n"
                      f"{escape(str(report.locator))}",
                      f"rows read {report.rows_read:,} · accepted {report.accepted:,} · skipped "
                      f"{report.skipped_total:,}"]
    if report.skipped:
        table = Table("skipped because", "rows", "row numbers", box=None)
        for reason, rows in sorted(report.skipped.items(), key=lambda kv: -len(kv[1])):
            shown = ", ".join(map(str, rows[:8])) + (f", … (+{len(rows) - 8})" if len(rows) > 8 else "")
            table.add_row(escape(reason), f"{len(rows):,}", shown)
        out.append(table)
    out.append(new_and_existing(report.new, report.existing))
    return out + [f"[yellow]warning:[/] {escape(warning)}" for warning in report.warnings]
