"""AMD aiter's tuned kernel tables (GEMM, fused MoE, Gated DeltaNet): one run per row, the tuner's
own statistic (a mean) on every run. See docs/aiter.md."""

from kernelindex.sources.aiter.importer import AiterReport, import_aiter, normalize_files

__all__ = ["AiterReport", "import_aiter", "normalize_files"]
