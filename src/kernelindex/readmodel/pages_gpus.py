"""GPU pages (/gpus/{slug}): datasheet peaks, measured ceilings, coverage, records held."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from kernelindex import registry, urls
from kernelindex.catalog.db import Catalog
from kernelindex.domain.gpus import GpuDatasheet
from kernelindex.domain.manifests import ExecutionEnvironment
from kernelindex.readmodel.ceilings import CeilingRow, ComputeCeilingRow, ceiling_rows, compute_ceiling_rows
from kernelindex.readmodel.errors import NotFound
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.loading import attainable_now
from kernelindex.readmodel.pages_common import CohortSummary, all_operations, cohort_summaries
from kernelindex.readmodel.paging import Paging, page_of

RECORDS_PER_PAGE = 25  # the H100 page held 279 cohorts in one 28,583 px table; 25 rows ≈ 6,000 px on a phone


@dataclass(frozen=True)
class GpuFacts(GpuDatasheet, JsonModel):
    """A GPU as the pages show it: its datasheet, and whether it is one of the priority GPUs."""

    priority: bool


@dataclass
class MeasuredCeiling(JsonModel):
    environment: str
    copy_bandwidth_bytes_per_s: float
    software: dict[str, str]
    read_bandwidth_bytes_per_s: float | None = None
    write_bandwidth_bytes_per_s: float | None = None


@dataclass
class Coverage(JsonModel):
    operation: str
    operation_title: str
    workloads_measured: int
    workloads_total: int
    cohorts: int
    eligible_runs: int
    url: str


@dataclass
class GpuPage(JsonModel):
    gpu: GpuFacts
    measured_ceilings: list[MeasuredCeiling] = field(default_factory=list)  # one per environment that measured
    ceilings: list[CeilingRow] = field(default_factory=list)  # the same, one row per ceiling kernel, and its floor
    compute_ceilings: list[ComputeCeilingRow] = field(default_factory=list)  # the ceiling GEMM, the fp16 peak
    coverage: list[Coverage] = field(default_factory=list)
    records: list[CohortSummary] = field(default_factory=list)  # one page of the cohorts measured here
    records_paging: Paging | None = None
    # Products whose runs may be this one, or this one's runs may be theirs (a source that did not record
    # the variant): search and the records filter count them for this GPU, labelled; they rank apart.
    may_be: list[dict[str, str]] = field(default_factory=list)


@dataclass
class GpuIndexEntry(JsonModel):
    gpu: GpuFacts
    cohorts: int
    eligible_runs: int
    url: str


def _facts(spec: registry.GpuSpec) -> GpuFacts:
    return GpuFacts(**{**spec.datasheet(), "peaks_tflops": dict(spec.peaks_tflops)},
                    priority=spec.slug in registry.priority_gpus())


def gpu_page(catalog: Catalog, slug: str, *, page: str | None = None, now: datetime) -> GpuPage:
    """The GPU's facts and coverage, and page ``page`` of the cohorts measured on it (with their holders)."""
    slug = registry.gpu_slug(slug) or slug
    spec = registry.gpus().get(slug)
    if spec is None:
        known = ", ".join(sorted(registry.gpus()))
        raise NotFound(f"no GPU {slug!r} in the datasheet table; known: {known}")
    clock = now
    model = GpuPage(_facts(spec), may_be=[{"slug": g, "name": registry.gpus()[g].name, "url": urls.gpu(g)}
                                          for g in registry.gpus_answering(slug) if g != slug])
    measured: dict[str, ExecutionEnvironment] = {}
    for data in all_operations(catalog):
        envs = {d for d in data.environments if (gpu := data.gpu_of(d)) is not None and gpu.slug == slug}
        measured.update((d, data.environments[d]) for d in envs if data.environments[d].spec.copy_bandwidth_bytes_per_s)
        runs = [r for r in data.runs if r.eligible and r.environment in envs]
        summaries = [s for s in cohort_summaries(data, clock) if s.gpu == slug and s.leader]
        if runs:
            model.coverage.append(Coverage(
                data.slug, data.title,
                len({r.workload for r in runs}), len(data.workloads), len(summaries), len(runs),
                urls.records(("operation", data.slug), ("gpu", slug))))
        model.records.extend(summaries)
    model.records, model.records_paging = page_of(model.records, page, RECORDS_PER_PAGE)
    _add_ceilings(catalog, model, spec, measured)
    return model


def _add_ceilings(catalog: Catalog, model: GpuPage, spec: registry.GpuSpec,
                  measured: dict[str, ExecutionEnvironment]) -> None:
    for digest, env in sorted(measured.items()):
        e = env.spec
        model.measured_ceilings.append(MeasuredCeiling(digest, e.copy_bandwidth_bytes_per_s or 0.0, e.software,
                                                       e.read_bandwidth_bytes_per_s, e.write_bandwidth_bytes_per_s))
    if measured:
        attainable = attainable_now(catalog).get(spec.slug)
        model.ceilings = ceiling_rows(list(measured.values()), spec.bandwidth_gbps, spec.source, attainable)
        model.compute_ceilings = compute_ceiling_rows(list(measured.values()), spec.peaks_tflops.get("fp16"),
                                                      spec.source, attainable)


def gpus_index(catalog: Catalog) -> list[GpuIndexEntry]:
    cohorts: dict[str, set[str]] = defaultdict(set)
    runs: Counter[str] = Counter()
    for data in all_operations(catalog):
        for run in data.runs:
            gpu = data.gpu_of(run.environment)
            if gpu is None or not run.eligible:
                continue
            cohorts[gpu.slug].add(run.cohort_key)
            runs[gpu.slug] += 1
    return [GpuIndexEntry(_facts(spec), len(cohorts.get(slug, ())), runs[slug], urls.gpu(slug))
            for slug, spec in registry.gpus().items()]
