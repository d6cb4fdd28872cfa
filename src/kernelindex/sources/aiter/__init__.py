"""AMD aiter's tuned kernel tables (GEMM, fused MoE, Gated DeltaNet): one run per row, the tuner's
own statistic (a mean) on every run. See docs/aiter.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelindex.sources.aiter.importer import AiterReport, import_aiter, normalize_files
from kernelindex.sources.aiter.normalize import SOURCE as SOURCE_NAME
from kernelindex.sources.declaration import ImportCommand, ImportOption, Say, SourceDeclaration

if TYPE_CHECKING:
    from kernelindex.catalog.db import Catalog


def _bundled(catalog: Catalog, actor: str, say: Say) -> list[str]:
    report = import_aiter(catalog, dry_run=False, actor=actor)
    return [f"{SOURCE_NAME}: {report.new.get('BenchmarkRun', 0)} runs"]


COMMAND = ImportCommand(
    "aiter",
    """Import AMD aiter's tuned tables: GEMM (bf16, a8w8 per-token, block-scale a8w8/a4w4,
    pre-shuffled, batched), fused MoE and Gated DeltaNet. One run per row, timed by aiter's tuner
    (mean of 101, profiler device time: metric latency:mean:ns, never ranked with medians).""",
    "kernelindex.sources.aiter.command",
    (ImportOption("path", "A folder of aiter tables (aiter/configs of a checkout) or an archive with its "
                  "PROVENANCE.json beside it (default: the shipped tables).", "--path", kind="path"),),
    counting="tables")

SOURCE = SourceDeclaration("aiter", "AMD aiter's tuned kernel tables", (SOURCE_NAME,), "docs/aiter.md", COMMAND,
                           _bundled, "Importing AMD aiter's tuned kernel tables (GEMM, fused MoE, Gated DeltaNet)…")

__all__ = ["AiterReport", "import_aiter", "normalize_files"]
