"""AMD aiter's tuned kernel tables (GEMM, fused MoE, Gated DeltaNet): one run per row, the tuner's
own statistic (a mean) on every run. See docs/aiter.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelindex.sources.aiter.importer import AiterReport, import_aiter, normalize_files
from kernelindex.sources.aiter.normalize import SOURCE as SOURCE_NAME
from kernelindex.sources.declaration import Say, SourceDeclaration

if TYPE_CHECKING:
    from kernelindex.catalog.db import Catalog


def _bundled(catalog: Catalog, actor: str, say: Say) -> list[str]:
    report = import_aiter(catalog, dry_run=False, actor=actor)
    return [f"{SOURCE_NAME}: {report.new.get('BenchmarkRun', 0)} runs"]


SOURCE = SourceDeclaration("aiter", "AMD aiter's tuned kernel tables", (SOURCE_NAME,), "docs/aiter.md", "aiter",
                           _bundled, "Importing AMD aiter's tuned kernel tables (GEMM, fused MoE, Gated DeltaNet)…")

__all__ = ["AiterReport", "import_aiter", "normalize_files"]
