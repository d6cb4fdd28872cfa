"""Challenges (/challenges): where a new measurement would add the most.

Exact workload × priority-GPU cells with no eligible run, unbeaten baselines (cohorts led by the
source's own reference implementation), single-entry cohorts, and stale records. Those four lists are one
ordered list of challenges, shown a numbered page at a time (``?page=``, readmodel.paging): with the bundled
catalog they are ~5,100 rows, which made a ~1 MB HTML page and a ~7 MB JSON twin."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

from kernelindex import registry, urls
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.holdings import has_runs
from kernelindex.domain.canonical import short_digest
from kernelindex.readmodel import labels
from kernelindex.readmodel.cache import kept
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.pages_common import CohortSummary
from kernelindex.readmodel.paging import Paging, page_of
from kernelindex.readmodel.requests import ask_url
from kernelindex.readmodel.summaries import OperationFacts, operation_summaries


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
    cells: list[MissingCell]  # on a page model: the cells on that page
    cells_total: int = 0  # the operation's cells in the whole list (set by the page)

    @property
    def missing_total(self) -> int:
        return sum(len(c.missing_gpus) for c in self.cells)


@dataclass
class NotVerified(JsonModel):
    operation: str
    operation_title: str
    reason: str
    url: str


@dataclass
class Unbuilt(JsonModel):
    """An implementation the runner could not bring to its GPU machine, with the registry's measured account."""

    name: str
    title: str
    operations: str
    reason: str


@dataclass
class KernelBenchLevel(JsonModel):
    """One KernelBench level of the newest problem set: how many of its problems have a verified run (the H200
    campaign's), and the problems left, with the registry's reason."""

    level: int
    problems: int
    verified: int
    reason: str  # why the rest have none ("" when none is left)
    left: list[NotVerified] = field(default_factory=list)


NOT_YET = "not yet verified by a KernelIndex runner"
# The newest problem set's operations have the plain slug; an older version's semantics add "-v" and 8 hex digits.
KERNELBENCH_SOURCE = "kernelbench"  # the source's key in sources/kernelbench/policy.yaml
KERNELBENCH_SLUG = re.compile(r"kernelbench-(\d+)-(\d+)-(?!.*-v[0-9a-f]{8}$).+")
PER_PAGE = 50  # rows of challenges per page: the whole list was ~5,100 rows (952 KB of HTML, 15,522 px tall)
# The paged lists, in page order: (the model's field, its heading, the HTML anchor).
SECTIONS = (("unmeasured", "Not measured on a priority GPU", "unmeasured"),
            ("unbeaten_baselines", "Unbeaten baselines", "baselines"),
            ("single_entry", "Single-entry cohorts", "single"),
            ("stale_records", "Stale records", "stale"))


@dataclass
class ChallengeSection(JsonModel):
    """One of the paged lists: where it lies in the whole ordered list and what of it this page holds."""

    name: str  # the model's field that holds its rows on this page
    title: str
    anchor: str
    total: int  # its rows in the whole list (a row of `unmeasured` is one workload of one operation)
    first_page: int | None  # the page where it starts (None when it is empty)
    last_page: int | None
    first: int  # 1-based position in the section of its first row on this page (0: none here)
    last: int


@dataclass
class ChallengesPage(JsonModel):
    priority_gpus: list[dict[str, str]]
    unmeasured: list[OperationGaps] = field(default_factory=list)
    unbeaten_baselines: list[CohortSummary] = field(default_factory=list)
    single_entry: list[CohortSummary] = field(default_factory=list)
    stale_records: list[CohortSummary] = field(default_factory=list)
    not_verified: list[NotVerified] = field(default_factory=list)
    unbuilt: list[Unbuilt] = field(default_factory=list)  # implementations the runner could not build (registry)
    kernelbench: list[KernelBenchLevel] = field(default_factory=list)  # empty without KernelBench's import
    kernelbench_note: str = ""  # how the campaign's runs were measured, every level alike (registry)
    counts: dict[str, int] = field(default_factory=dict)
    sections: list[ChallengeSection] = field(default_factory=list)
    paging: Paging | None = None


def challenges_page(catalog: Catalog, *, page: str | None = None, now: datetime) -> ChallengesPage:
    """Page ``page`` (1 when not given) of the challenges, ``PER_PAGE`` rows; the counts, the sections'
    places and the operations without verified runs are the whole catalog's, on every page."""
    whole = kept(catalog, "challenges", (now.date().isoformat(),), lambda: _all_challenges(catalog, now))
    rows: list[tuple[str, Any]] = [("unmeasured", (gaps, cell)) for gaps in whole.unmeasured for cell in gaps.cells]
    for name, _, _ in SECTIONS[1:]:
        rows += [(name, cohort) for cohort in getattr(whole, name)]
    chunk, paging = page_of(rows, page, PER_PAGE)
    model = ChallengesPage(whole.priority_gpus, not_verified=whole.not_verified, unbuilt=whole.unbuilt,
                           kernelbench=whole.kernelbench,
                           kernelbench_note=whole.kernelbench_note, counts=whole.counts, paging=paging)
    for name, row in chunk:
        if name != "unmeasured":
            getattr(model, name).append(row)
            continue
        gaps, cell = row
        if not model.unmeasured or model.unmeasured[-1].operation != gaps.operation:
            model.unmeasured.append(OperationGaps(gaps.operation, gaps.operation_title, [], len(gaps.cells)))
        model.unmeasured[-1].cells.append(cell)
    start = 0  # where the section starts in the whole list (0-based)
    for name, title, anchor in SECTIONS:
        total = sum(1 for n, _ in rows if n == name)
        here = [i for i, (n, _) in enumerate(chunk) if n == name]
        first = paging.first + here[0] - start if here else 0
        model.sections.append(ChallengeSection(
            name, title, anchor, total, start // PER_PAGE + 1 if total else None,
            (start + total - 1) // PER_PAGE + 1 if total else None, first, first + len(here) - 1 if here else 0))
        start += total
    return model


def _all_challenges(catalog: Catalog, now: datetime) -> ChallengesPage:
    clock = now
    gpus = registry.gpus()
    priority = [g for g in registry.priority_gpus() if g in gpus]
    page = ChallengesPage([{"slug": g, "name": gpus[g].name, "short": gpus[g].short} for g in priority])
    page.unbuilt = [Unbuilt(name, u["title"], u["operations"], u["reason"])
                    for name, u in sorted(registry.unbuilt_implementations().items())]
    curated = registry.operations()
    problems: dict[int, list[tuple[int, OperationFacts]]] = {}
    for data in operation_summaries(catalog, now=clock):
        if found := KERNELBENCH_SLUG.fullmatch(data.slug):
            problems.setdefault(int(found[1]), []).append((int(found[2]), data))
        summaries = data.cohorts_with_leader()
        gaps = data.derived(("challenge-gaps", *priority), partial(_gaps, data, priority))
        if gaps.cells:
            page.unmeasured.append(gaps)
        page.unbeaten_baselines += [s for s in summaries if s.leader and s.leader.baseline]
        page.single_entry += [s for s in summaries if s.eligible_runs == 1]
        page.stale_records += [s for s in summaries if s.leader and s.leader.stale]
        # The runner verifies the operations KernelIndex curates (registry/operations); those imported
        # from another index (FlashInfer-Bench, GPU MODE) are outside its scope, not "unverified".
        if data.slug in curated and not data.verified_regions:
            title = data.title
            reason = registry.why_not_verified(data.slug) or NOT_YET
            page.not_verified.append(NotVerified(data.slug, title, reason, urls.operation(data.slug)))
    # Counted only where KernelBench's problem set is imported: the shipped verified bundles alone bring just the
    # problems the runner measured, and "8 of 8 verified" would misstate a level of 100.
    if has_runs(catalog, KERNELBENCH_SOURCE):
        page.kernelbench = [_kernelbench_level(level, problems[level]) for level in sorted(problems)]
        page.kernelbench_note = registry.kernelbench_protocol_note()
    page.counts = {
        "unmeasured_cells": sum(g.missing_total for g in page.unmeasured),
        "unbeaten_baselines": len(page.unbeaten_baselines),
        "single_entry": len(page.single_entry),
        "stale_records": len(page.stale_records),
        "not_verified": len(page.not_verified),
    }
    return page


def _kernelbench_level(level: int, problems: list[tuple[int, OperationFacts]]) -> KernelBenchLevel:
    """A level's problems without a verified run, in problem order, under the registry's reason for the level."""
    left = [NotVerified(d.slug, d.title, "", urls.operation(d.slug)) for _, d in sorted(problems, key=lambda p: p[0])
            if not d.verified_regions]
    reason = (registry.kernelbench_pending().get(level) or NOT_YET) if left else ""
    return KernelBenchLevel(level, len(problems), len(problems) - len(left), reason, left)


def _gaps(data: OperationFacts, priority: list[str]) -> OperationGaps:
    """Workloads with eligible runs that lack one on a priority GPU (measured: GPU slug or product)."""
    measured = {workload: set(gpus) for workload, gpus in data.measured.items()}
    gpus = registry.gpus()
    cells = []
    for digest in sorted(measured, key=lambda d: labels.natural_key(data.workload_labels[d])):
        missing = [gpus[g].short for g in priority if g not in measured[digest]]
        if missing:
            shown = sorted(gpus[m].short if m in gpus else m for m in measured[digest])
            label = data.workload_labels[digest]
            asks = [{"gpu": g, "label": gpus[g].short, "url": ask_url(data.slug, short_digest(digest), g)}
                    for g in priority if g not in measured[digest]]
            cells.append(MissingCell(short_digest(digest), label, missing, shown,
                                     urls.operation(data.slug, ("workload", short_digest(digest))), asks))
    title = data.title
    return OperationGaps(data.slug, title, cells, len(cells))
