"""'Not measured on H100 for this workload', said near the top of an operation page: for each
priority GPU without a run of the selected workload, the floor-v1 estimate on that GPU (its
datasheet bandwidth) and the nearest measured GPU among those with runs of this workload and timed
region by the nearest-GPU rule (``policy.nearest_gpu``: the same architecture first, then the better evidence,
then the fresher evidence, then the closer datasheet bandwidth) — and the page says why that GPU was chosen."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from kernelindex import registry, urls
from kernelindex.policy.evidence import LEVEL_ORDER
from kernelindex.policy.nearest_gpu import MeasuredGpu, measured_gpu
from kernelindex.policy.nearest_gpu import nearest_gpu as policy_nearest_gpu
from kernelindex.readmodel.cohorts import Cohort
from kernelindex.readmodel.errors import BadParameter
from kernelindex.readmodel.floors import gpu_floor
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.labels import cohort_key_short, workload_key
from kernelindex.readmodel.loading import OperationData


@dataclass
class NearestMeasured(JsonModel):
    gpu: str
    gpu_name: str
    bandwidth_gbps: float
    leader_ns: int | None
    url: str
    cohort: str = ""  # its fastest cohort of the workload and region (short key, as in ?cohort=)
    why: str = ""  # why this GPU was chosen (architecture, evidence, freshness, bandwidth)


@dataclass
class NotMeasured(JsonModel):
    gpu: str
    gpu_name: str
    bandwidth_gbps: float
    floor_ns: float
    region: str
    nearest: NearestMeasured | None
    # What sets the floor: "bandwidth" (bytes ÷ HBM), "compute" (FLOPs ÷ dense peak) or "latency" (the GPU's
    # measured minimum kernel time outlasts both).
    bound: str = "bandwidth"
    peak_tflops: float | None = None  # the datasheet dense rate a compute-bound floor divides by
    latency: str = ""  # the floor's latency term in words (policy.floor.FloorEstimate.latency_words)


def asked_gpu(word: str | None) -> registry.GpuSpec | None:
    """The GPU a page's ``?gpu=`` names, through the one alias table (``h100`` → ``h100-sxm``)."""
    if not word:
        return None
    spec = registry.gpus().get(registry.gpu_slug(word) or word)
    if spec is None:
        known = ", ".join(sorted(registry.gpus()))
        raise BadParameter("gpu", f"no GPU {word[:40]!r} in the datasheet table; known: {known}")
    return spec


def on_gpu(data: OperationData, cohorts: Iterable[Cohort], slug: str) -> list[Cohort]:
    """The cohorts with eligible runs measured on GPU ``slug``."""
    return [c for c in cohorts if c.eligible and (g := data.gpu_of(c.environment)) is not None and g.slug == slug]


def not_measured(data: OperationData, selected: Cohort, all_cohorts: dict[str, Cohort],
                 gpus: Sequence[str] | None = None) -> list[NotMeasured]:
    """For each GPU of ``gpus`` (the priority GPUs when not given) without an eligible run of the
    selected workload: its floor estimate and the nearest measured GPU."""
    region = data.protocols[selected.protocol].spec.timed_region
    same_workload = [c for c in all_cohorts.values() if c.workload == selected.workload and c.eligible]
    covered = {g.slug for c in same_workload if (g := data.gpu_of(c.environment))}
    measured: dict[str, Cohort] = {}
    best: dict[str, tuple[int, int]] = {}  # each GPU's best cohort so far: its evidence level, its leader's figure
    for c in same_workload:
        gpu = data.gpu_of(c.environment)
        if gpu and data.protocols[c.protocol].spec.timed_region == region and c.leader:
            # The evidence the rule weighs is the cohort it links: a GPU chosen for its verified runs offers them,
            # not a faster reported cohort of the same GPU
            rank = (_evidence_level(c), c.leader_ns or 0)
            if gpu.slug not in measured or rank < best[gpu.slug]:
                measured[gpu.slug], best[gpu.slug] = c, rank
    facts = measured_gpus(data, [c for c in same_workload if data.protocols[c.protocol].spec.timed_region == region])
    known = registry.gpus()
    out = []
    for slug in registry.priority_gpus() if gpus is None else gpus:
        if slug in covered or slug not in known:
            continue
        spec = known[slug]
        floor = gpu_floor(data, selected.workload, spec, region)
        peak = floor.peak_flops_per_s if floor.bound == "compute" else None
        out.append(NotMeasured(slug, spec.short, spec.bandwidth_gbps, floor.floor_ns, region,
                               _nearest(data, spec, measured, facts), floor.bound, peak / 1e12 if peak else None,
                               floor.latency_words))
    return out


def _evidence_level(cohort: Cohort) -> int:
    return min((LEVEL_ORDER.get(r.evidence, 99) for r in cohort.eligible), default=99)


def measured_gpus(data: OperationData, cohorts: Iterable[Cohort]) -> list[MeasuredGpu]:
    """Per GPU of these cohorts: the best evidence and the newest observation of its eligible runs."""
    runs: dict[str, list[tuple[str, datetime]]] = {}
    for cohort in cohorts:
        if (gpu := data.gpu_of(cohort.environment)) is not None:
            runs.setdefault(gpu.slug, []).extend((r.evidence, r.observed_at) for r in cohort.eligible)
    return [m for slug, found in sorted(runs.items()) if (m := measured_gpu(slug, found))]


def nearest_gpu(asked: registry.GpuSpec, measured: Iterable[MeasuredGpu]) -> tuple[registry.GpuSpec, str] | None:
    """The measured GPU nearest the asked one, and why (``policy.nearest_gpu``, over the datasheet table): the
    one rule for the page's banner, ``ki use`` and the order of search's cohorts on other GPUs."""
    return policy_nearest_gpu(asked, measured, registry.gpus())


def _nearest(data: OperationData, asked: registry.GpuSpec, measured: dict[str, Cohort],
             facts: list[MeasuredGpu]) -> NearestMeasured | None:
    gpus = registry.gpus()
    nearest = nearest_gpu(asked, facts)
    if nearest is None:
        return None
    slug, why = nearest[0].slug, nearest[1]
    cohort = measured[slug]
    url = urls.cohort(data.slug, workload_key(cohort.workload), cohort_key_short(cohort.key))
    return NearestMeasured(slug, gpus[slug].short, gpus[slug].bandwidth_gbps,
                           cohort.leader_ns, url, cohort_key_short(cohort.key), why)
