"""The public KernelIndex site's catalog export (zstandard JSON Lines of its tables): FlashInfer-Bench
and GPU MODE KernelBot rows mapped onto our manifests, under the source policy."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kernelindex.sources.base import FileTransport, shipped
from kernelindex.sources.declaration import ImportCommand, ImportOption, Say, SourceDeclaration
from kernelindex.sources.kernelindex_export.importer import ExportReport, import_export

if TYPE_CHECKING:
    from kernelindex.catalog.db import Catalog


def bundled_export_path() -> Path:
    """The shipped derived file: the publishable rows of the staged export (see its PROVENANCE.json)."""
    return shipped("kernelindex_export", "catalog-publishable.jsonl.zst")


def _bundled(catalog: Catalog, actor: str, say: Say) -> list[str]:
    """The publishable rows of the staged export, saying each quarter mapped."""
    shown: set[int] = set()

    def progress(done: int, total: int) -> None:
        quarter = 4 * done // max(total, 1)
        if quarter not in shown:
            shown.add(quarter)
            say(f"  mapped {done:,} of {total:,} runs")

    report = import_export(catalog, FileTransport(bundled_export_path()), dry_run=False, actor=actor,
                           progress=progress)
    return [f"kernelindex-export: {report.new.get('BenchmarkRun', 0)} runs"]


# The export's publishable sources: its runs carry these names (SOL-ExecBench's are refused by policy).
COMMAND = ImportCommand(
    "kernelindex-export",
    """Import FlashInfer-Bench and GPU MODE KernelBot rows from a KernelIndex catalog export, under
    the source policy: SOL-ExecBench rows are refused, serving tables and record history skipped.""",
    "kernelindex.sources.kernelindex_export.command",
    (ImportOption("file", "The export (.jsonl.zst or .jsonl)."),
     ImportOption("source", "Import only this source (e.g. flashinfer-bench).", "--source", kind="text")),
    publish_help="Publish, one transaction per source.")

SOURCE = SourceDeclaration("export", "FlashInfer-Bench and GPU MODE KernelBot runs (the KernelIndex catalog export)",
                           ("flashinfer-bench", "gpumode-kernelbot"), "docs/design.md", COMMAND,
                           _bundled, "Importing FlashInfer-Bench and GPU MODE KernelBot runs (the KernelIndex "
                           "catalog export)…")

__all__ = ["ExportReport", "bundled_export_path", "import_export"]
