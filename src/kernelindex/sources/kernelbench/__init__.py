"""KernelBench (ScalingIntelligence/KernelBench, MIT): its problems as operations, their baseline
timings on many GPUs as reported runs. See docs/sources-kernelbench.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelindex.sources.declaration import ImportCommand, ImportOption, Say, SourceDeclaration
from kernelindex.sources.kernelbench.importer import KernelBenchReport, import_kernelbench, map_kernelbench
from kernelindex.sources.kernelbench.read import read_kernelbench, shipped_path
from kernelindex.sources.kernelbench.runs import SOURCE as SOURCE_NAME

if TYPE_CHECKING:
    from kernelindex.catalog.db import Catalog


def _bundled(catalog: Catalog, actor: str, say: Say) -> list[str]:
    report = import_kernelbench(catalog, dry_run=False, actor=actor)
    refused = sum(report.mapped.refused.values())
    return [f"{SOURCE_NAME}: {report.new.get('BenchmarkRun', 0)} runs ({report.mapped.timed} timed, "
            f"{report.mapped.failed} failed; {refused} entries refused with their reasons)"]


COMMAND = ImportCommand(
    "kernelbench",
    """Import KernelBench (ScalingIntelligence/KernelBench, MIT): levels 1-3 as operations (one per
    problem semantics, one workload per problem file) and every baseline-timing entry as a run of
    PyTorch's configuration on the GPU the entry names — or refused, with its reason (no hardware,
    level 4/5, a file whose pairing with its problem set fails the physics check).""",
    "kernelindex.sources.kernelbench.command",
    (ImportOption("file", "A file made by scripts/derive-kernelbench (default: the shipped one).", "--file"),),
    counting="entries")

SOURCE = SourceDeclaration("kernelbench", "KernelBench's problems and baseline timings", (SOURCE_NAME,),
                           "docs/sources-kernelbench.md", COMMAND, _bundled,
                           "Importing KernelBench's problems and baseline timings…")

__all__ = ["KernelBenchReport", "import_kernelbench", "map_kernelbench", "read_kernelbench", "shipped_path"]
