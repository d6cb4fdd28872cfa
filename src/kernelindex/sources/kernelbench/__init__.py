"""KernelBench (ScalingIntelligence/KernelBench, MIT): its problems as operations, their baseline
timings on many GPUs as reported runs. See docs/sources-kernelbench.md."""

from kernelindex.sources.kernelbench.importer import KernelBenchReport, import_kernelbench, map_kernelbench
from kernelindex.sources.kernelbench.read import read_kernelbench, shipped_path

__all__ = ["KernelBenchReport", "import_kernelbench", "map_kernelbench", "read_kernelbench", "shipped_path"]
