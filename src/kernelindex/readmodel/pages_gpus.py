"""GPU pages (/gpus/{slug}): datasheet peaks, measured ceilings, coverage, records held."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

from kernelindex import registry, urls
from kernelindex.catalog.db import Catalog
from kernelindex.domain.gpus import GpuDatasheet
from kernelindex.domain.manifests import ExecutionEnvironment
from kernelindex.readmodel.ceilings import CeilingRow, ComputeCeilingRow, ceiling_rows, compute_ceiling_rows
from kernelindex.readmodel.errors import NotFound
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.loading import attainable_now
from kernelindex.readmodel.objects import environments_by_digest
from kernelindex.readmodel.pages_common import CohortSummary
from kernelindex.readmodel.paging import Paging, page_of
from kernelindex.readmodel.summaries import operation_summaries

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
    model = GpuPage(_facts(spec), may_be=[{"slug": g, "name": registry.gpus()[g].name, "url": urls.gpu(g)}
                                          for g in registry.gpus_answering(slug) if g != slug])
    ceiling_environments: set[str] = set()
    for facts in operation_summaries(catalog, now=now):
        share = next((g for g in facts.gpus if g.gpu == slug), None)
        if share is None:
            continue
        ceiling_environments.update(share.ceiling_environments)
        summaries = [s for s in facts.cohorts_with_leader() if s.gpu == slug]
        if share.eligible_runs:
            model.coverage.append(Coverage(
                facts.slug, facts.title, share.workloads_measured, facts.workloads_total, len(summaries),
                share.eligible_runs, urls.records(("operation", facts.slug), ("gpu", slug))))
        model.records.extend(summaries)
    model.records, model.records_paging = page_of(model.records, page, RECORDS_PER_PAGE)
    _add_ceilings(catalog, model, spec, environments_by_digest(catalog, ceiling_environments))
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


def gpus_index(catalog: Catalog, *, now: datetime | None = None) -> list[GpuIndexEntry]:
    """Every GPU of the datasheet table with its cohorts and eligible runs. Counts only, so the day
    (``now``: the summaries' clock, today when not given) changes nothing in it."""
    cohorts: Counter[str] = Counter()
    runs: Counter[str] = Counter()
    for facts in operation_summaries(catalog, now=now or datetime.now(UTC)):
        for share in facts.gpus:
            cohorts[share.gpu] += share.cohorts
            runs[share.gpu] += share.eligible_runs
    return [GpuIndexEntry(_facts(spec), cohorts[slug], runs[slug], urls.gpu(slug))
            for slug, spec in registry.gpus().items()]
