"""Liger-Kernel benchmark CSV (first source). See registry/sources/liger/ for the curated mapping."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelindex.sources.declaration import ImportCommand, ImportOption, Say, SourceDeclaration
from kernelindex.sources.liger.importer import (
    bundled_csv_path,
    bundled_csv_paths,
    import_liger,
    import_liger_files,
    parse_and_normalize,
)
from kernelindex.sources.liger.normalize import SOURCE as SOURCE_NAME

if TYPE_CHECKING:
    from kernelindex.catalog.db import Catalog


def _bundled(catalog: Catalog, actor: str, say: Say) -> list[str]:
    """The three shipped CSVs, one publication each."""
    return [f"{SOURCE_NAME} {report.locator.rsplit('/', 1)[-1]}: {report.new.get('BenchmarkRun', 0)} runs"
            for report in import_liger_files(catalog, dry_run=False, actor=actor)]


COMMAND = ImportCommand(
    "liger",
    """Import Liger-Kernel's benchmark CSVs: by default the three bundled files (the main file and
    the NVIDIA B200 cuTile and CuTe-DSL files), one publication each; --file imports one CSV.
    Speed rows become latency runs; memory rows a second metric, peak memory (MiB).

    Limits: the file must be UTF-8 and at most 256 MiB; a field over 131,072 characters, a time
    that is not positive, below 1 ns or over 2^53 ns, an integer beyond ±2^53, or a config nested
    deeper than 32 levels skips its row, reported with the row number. See docs/reliability.md.
    """,
    "kernelindex.sources.liger.command",
    (ImportOption("file", "CSV to import (default: bundled).", "--file"),))

SOURCE = SourceDeclaration("liger", "Liger-Kernel's benchmark files", (SOURCE_NAME,), "docs/design.md", COMMAND,
                           _bundled, "Importing Liger-Kernel's benchmark files…")

__all__ = ["bundled_csv_path", "bundled_csv_paths", "import_liger", "import_liger_files", "parse_and_normalize"]
