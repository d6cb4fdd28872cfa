"""The public KernelIndex site's catalog export (zstandard JSON Lines of its tables): FlashInfer-Bench
and GPU MODE KernelBot rows mapped onto our manifests, under the source policy."""

from pathlib import Path

from kernelindex.sources.base import shipped
from kernelindex.sources.kernelindex_export.importer import ExportReport, import_export


def bundled_export_path() -> Path:
    """The shipped derived file: the publishable rows of the staged export (see its PROVENANCE.json)."""
    return shipped("kernelindex_export", "catalog-publishable.jsonl.zst")


__all__ = ["ExportReport", "bundled_export_path", "import_export"]
