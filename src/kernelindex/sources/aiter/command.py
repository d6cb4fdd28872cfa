"""What ``ki import aiter`` runs and prints (the CLI builds the command from ``SOURCE.command``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table

from kernelindex.sources.aiter.archive import ArchiveError
from kernelindex.sources.aiter.importer import AiterReport, import_aiter
from kernelindex.sources.printout import new_and_existing

if TYPE_CHECKING:
    from kernelindex.catalog.db import Catalog

INPUT_ERRORS = (ArchiveError, OSError)


def run(catalog: Catalog, *, dry_run: bool, actor: str, progress: Callable[[int, int], None],
        path: Path | None = None) -> AiterReport:
    return import_aiter(catalog, path, dry_run=dry_run, actor=actor, progress=progress)


def printout(imported: AiterReport, safe: Callable[[Any], Any]) -> list[Any]:
    report: dict[str, Any] = imported.to_json()
    verb = "published" if report["published"] else "dry run — nothing written"
    out: list[Any] = [f"[bold]AMD aiter tuned tables[/] ({verb})\nsnapshot {report['snapshot_digest']}\n"
                      f"{escape(str(report['locator']))}",
                      f"files {report['files']} · rows read {report['rows_read']:,} · accepted "
                      f"{report['accepted']:,} · skipped {report['skipped_total']:,}"]
    families = Table("family", "rows imported", box=None)
    for family, rows in report["accepted_by_family"].items():
        families.add_row(family, f"{rows:,}")
    gpus = Table("GPU (as the rows prove it)", "rows", box=None)
    for gpu, rows in report["gpus"].items():
        gpus.add_row(escape(gpu), f"{rows:,}")
    out += [families, gpus]
    if report["skipped"]:
        skipped = Table("skipped because", "rows", "first rows", box=None)
        for reason, entry in report["skipped"].items():
            skipped.add_row(escape(reason), f"{entry['rows']:,}", escape(", ".join(entry["first"][:3])))
        out.append(skipped)
    return [*out, new_and_existing(report["new"], report["existing"])]
