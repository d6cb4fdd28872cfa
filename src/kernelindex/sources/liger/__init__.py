"""Liger-Kernel benchmark CSV (first source). See registry/sources/liger/ for the curated mapping."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelindex.sources.declaration import Say, SourceDeclaration
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


SOURCE = SourceDeclaration("liger", "Liger-Kernel's benchmark files", (SOURCE_NAME,), "docs/design.md", "liger",
                           _bundled, "Importing Liger-Kernel's benchmark files…")

__all__ = ["bundled_csv_path", "bundled_csv_paths", "import_liger", "import_liger_files", "parse_and_normalize"]
