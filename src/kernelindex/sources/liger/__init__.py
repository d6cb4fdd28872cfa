"""Liger-Kernel benchmark CSV (first source). See registry/sources/liger/ for the curated mapping."""

from kernelindex.sources.liger.importer import (
    bundled_csv_path,
    bundled_csv_paths,
    import_liger,
    import_liger_files,
    parse_and_normalize,
)

__all__ = ["bundled_csv_path", "bundled_csv_paths", "import_liger", "import_liger_files", "parse_and_normalize"]
