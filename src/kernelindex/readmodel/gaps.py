"""'Not measured on H100 for this workload', said near the top of an operation page: for each
priority GPU without a run of the selected workload, the floor-v1 estimate on that GPU (its
datasheet bandwidth) and the nearest measured GPU — the one with runs of this workload and timed
region whose datasheet bandwidth is closest (ties: the newer architecture)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kernelindex import registry
from kernelindex.policy.floor import floor_estimate
from kernelindex.readmodel.cohorts import Cohort
from kernelindex.readmodel.errors import BadParameter
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


@dataclass
class NotMeasured(JsonModel):
    gpu: str
    gpu_name: str
    bandwidth_gbps: float
    floor_ns: float
    region: str
    nearest: NearestMeasured | None


def _arch_number(architecture: str) -> int:
    digits = "".join(ch for ch in architecture if ch.isdigit())
    return int(digits) if digits else 0


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
    best_ns: dict[str, int] = {}  # the leader's median of each GPU's fastest cohort so far
    for c in same_workload:
        gpu = data.gpu_of(c.environment)
        if gpu and data.protocols[c.protocol].spec.timed_region == region and c.leader:
            ns = c.leader.median_ns or 0
            if gpu.slug not in measured or ns < best_ns[gpu.slug]:
                measured[gpu.slug], best_ns[gpu.slug] = c, ns
    known = registry.gpus()
    out = []
    for slug in registry.priority_gpus() if gpus is None else gpus:
        if slug in covered or slug not in known:
            continue
        spec = known[slug]
        floor = floor_estimate(*data.specs_json(selected.workload), spec)
        out.append(NotMeasured(slug, spec.short, spec.bandwidth_gbps, floor.floor_ns, region,
                               _nearest(data, spec, measured)))
    return out


def nearest_gpu(asked: registry.GpuSpec, measured: Iterable[str]) -> registry.GpuSpec | None:
    """The measured GPU whose datasheet bandwidth is closest to the asked one's; ties → the newer
    architecture (then the slug). The one rule for the page's banner and ``ki use``."""
    gpus = registry.gpus()
    candidates = [gpus[s] for s in measured if s in gpus and s != asked.slug]
    if not candidates:
        return None
    return min(candidates, key=lambda g: (abs(g.bandwidth_gbps - asked.bandwidth_gbps),
                                          -_arch_number(g.architecture), g.slug))


def _nearest(data: OperationData, asked: registry.GpuSpec, measured: dict[str, Cohort]) -> NearestMeasured | None:
    gpus = registry.gpus()
    nearest = nearest_gpu(asked, measured)
    if nearest is None:
        return None
    slug = nearest.slug
    cohort = measured[slug]
    url = (f"/operations/{data.slug}?workload={workload_key(cohort.workload)}"
           f"&cohort={cohort_key_short(cohort.key)}")
    return NearestMeasured(slug, gpus[slug].short, gpus[slug].bandwidth_gbps,
                           cohort.leader.median_ns if cohort.leader else None, url, cohort_key_short(cohort.key))
