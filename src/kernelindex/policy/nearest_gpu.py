"""The nearest-GPU rule: of the GPUs with runs, which stands in for an asked GPU that has none. The same
architecture first, then the better evidence (verified over reported), then the newer observation, then the
closer datasheet bandwidth (then the slug). Only a GPU of the asked one's vendor: an AMD part's kernels (aiter's,
built for ROCm) say nothing of what runs on an NVIDIA GPU, nor the reverse.

One rule for every door: the operation page's banner, ``ki use`` and the "Use this" box take the first GPU of
this order; search orders the cohorts of other GPUs by it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from kernelindex.domain.gpus import GpuSpec
from kernelindex.policy.evidence import LEVEL_ORDER


@dataclass(frozen=True)
class MeasuredGpu:
    """What the nearest-GPU rule weighs about one GPU with runs of the workload and region."""

    slug: str
    evidence: str  # the best evidence level of its eligible runs there
    observed_at: datetime  # its newest eligible run there


def measured_gpu(slug: str, runs: Iterable[tuple[str, datetime]]) -> MeasuredGpu | None:
    """One GPU's facts from its eligible runs' (evidence, observed_at); None when it has none."""
    found = list(runs)
    if not found:
        return None
    return MeasuredGpu(slug, min((e for e, _ in found), key=lambda e: LEVEL_ORDER.get(e, 99)),
                       max(at for _, at in found))


def by_nearness(asked: GpuSpec, measured: Iterable[MeasuredGpu], gpus: Mapping[str, GpuSpec]) -> list[MeasuredGpu]:
    """The measured GPUs other than the asked one, of its vendor, nearest first (``gpus``: the datasheet table)."""
    candidates = [m for m in measured
                  if m.slug in gpus and m.slug != asked.slug and gpus[m.slug].vendor == asked.vendor]

    def key(m: MeasuredGpu) -> tuple:
        gpu = gpus[m.slug]
        return (gpu.architecture != asked.architecture, LEVEL_ORDER.get(m.evidence, 99), -m.observed_at.timestamp(),
                abs(gpu.bandwidth_gbps - asked.bandwidth_gbps), m.slug)

    return sorted(candidates, key=key)


def nearest_gpu(asked: GpuSpec, measured: Iterable[MeasuredGpu],
                gpus: Mapping[str, GpuSpec]) -> tuple[GpuSpec, str] | None:
    """The first GPU of :func:`by_nearness`, and why it was chosen, in words."""
    ordered = by_nearness(asked, measured, gpus)
    if not ordered:
        return None
    chosen = ordered[0]
    gpu = gpus[chosen.slug]
    same = (f"the same architecture as {asked.short} ({asked.architecture})" if gpu.architecture == asked.architecture
            else f"no GPU of {asked.short}'s architecture ({asked.architecture}) has runs")
    why = (f"{same}, {chosen.evidence} evidence observed {chosen.observed_at.date().isoformat()}, datasheet bandwidth "
           f"{gpu.bandwidth_gbps:,.0f} GB/s against {asked.bandwidth_gbps:,.0f} GB/s — chosen by architecture, "
           "then evidence, then freshness, then bandwidth among the GPUs with runs of this workload and region")
    return gpu, why
