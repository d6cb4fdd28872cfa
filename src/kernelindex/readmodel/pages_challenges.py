"""Challenges (/challenges): where a new measurement would add the most.

Exact workload × priority-GPU cells with no eligible run, unbeaten baselines (cohorts led by the
source's own reference implementation), single-entry cohorts, and stale records."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from kernelindex import registry
from kernelindex.catalog.db import Catalog
from kernelindex.domain.canonical import short_digest
from kernelindex.readmodel import labels
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.pages_common import CohortSummary, all_operations, cohort_summaries
from kernelindex.readmodel.pages_home import verified_regions
from kernelindex.readmodel.requests import ask_url


@dataclass
class MissingCell(JsonModel):
    workload: str
    workload_label: str
    missing_gpus: list[str]
    measured_on: list[str]
    url: str
    asks: list[dict[str, str]] = field(default_factory=list)  # "Ask for this measurement", per missing GPU


@dataclass
class OperationGaps(JsonModel):
    operation: str
    operation_title: str
    cells: list[MissingCell]

    @property
    def missing_total(self) -> int:
        return sum(len(c.missing_gpus) for c in self.cells)


@dataclass
class NotVerified(JsonModel):
    operation: str
    operation_title: str
    reason: str
    url: str


NOT_YET = "not yet verified by a KernelIndex runner"


@dataclass
class ChallengesPage(JsonModel):
    priority_gpus: list[dict[str, str]]
    unmeasured: list[OperationGaps] = field(default_factory=list)
    unbeaten_baselines: list[CohortSummary] = field(default_factory=list)
    single_entry: list[CohortSummary] = field(default_factory=list)
    stale_records: list[CohortSummary] = field(default_factory=list)
    not_verified: list[NotVerified] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


def challenges_page(catalog: Catalog, *, now: datetime) -> ChallengesPage:
    clock = now
    gpus = registry.gpus()
    priority = [g for g in registry.priority_gpus() if g in gpus]
    page = ChallengesPage([{"slug": g, "name": gpus[g].name, "short": gpus[g].short} for g in priority])
    curated = registry.operations()
    for data in all_operations(catalog):
        summaries = [s for s in cohort_summaries(data, clock) if s.leader]
        gaps = _gaps(data, priority)
        if gaps.cells:
            page.unmeasured.append(gaps)
        page.unbeaten_baselines += [s for s in summaries if s.leader and s.leader.baseline]
        page.single_entry += [s for s in summaries if s.eligible_runs == 1]
        page.stale_records += [s for s in summaries if s.leader and s.leader.stale]
        # The runner verifies the operations KernelIndex curates (registry/operations); those imported
        # from another index (FlashInfer-Bench, GPU MODE) are outside its scope, not "unverified".
        if data.slug in curated and not verified_regions(data):
            title = data.title
            reason = registry.why_not_verified(data.slug) or NOT_YET
            page.not_verified.append(NotVerified(data.slug, title, reason, f"/operations/{data.slug}"))
    page.counts = {
        "unmeasured_cells": sum(g.missing_total for g in page.unmeasured),
        "unbeaten_baselines": len(page.unbeaten_baselines),
        "single_entry": len(page.single_entry),
        "stale_records": len(page.stale_records),
        "not_verified": len(page.not_verified),
    }
    return page


def _gaps(data, priority: list[str]) -> OperationGaps:  # noqa: ANN001 - OperationData
    """Workloads with eligible runs that lack one on a priority GPU (measured: GPU slug or product)."""
    measured: dict[str, set[str]] = {}
    for run in data.runs:
        if run.eligible:
            gpu = data.gpu_of(run.environment)
            product = data.environments[run.environment]["spec"]["hardware"]["product"]
            measured.setdefault(run.workload, set()).add(gpu.slug if gpu else product)
    gpus = registry.gpus()
    cells = []
    for digest in sorted(measured, key=lambda d: labels.natural_key(labels.workload_label(data.operation,
                                                                                  data.workloads[d]))):
        missing = [gpus[g].short for g in priority if g not in measured[digest]]
        if missing:
            shown = sorted(gpus[m].short if m in gpus else m for m in measured[digest])
            label = labels.workload_label(data.operation, data.workloads[digest])
            asks = [{"gpu": g, "label": gpus[g].short, "url": ask_url(data.slug, short_digest(digest), g)}
                    for g in priority if g not in measured[digest]]
            cells.append(MissingCell(short_digest(digest), label, missing, shown,
                                     f"/operations/{data.slug}?workload={short_digest(digest)}", asks))
    title = data.title
    return OperationGaps(data.slug, title, cells)
