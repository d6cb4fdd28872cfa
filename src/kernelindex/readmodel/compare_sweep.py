"""Compare by implementation (``/compare?operation=rope&impl=liger&impl=torch-compile&gpu=h200``): two
implementations, or two versions of one, on one or two GPUs, across the operation's workloads in one timed
region (issue 43 item 8; docs/compare.md).

Each implementation on each GPU is a series. A cell is the series' row in one cohort of the workload: its
row figure (the median of its replicates, ``Cohort.figure``), its rank there, and what timed it. The cohort
is the one the default rule (``operation_select.pick_default``) leads with among the cohorts that hold the
most of the series on that GPU, so implementations measured together are read from one cohort. Nothing is
ranked here: a row names its fastest cell only when every measured cell was timed by the same timer under the
same protocol version and statistic; otherwise it says what differs, and the sweep's facts say, per series,
which timers, protocol versions and statistics its cells used ("same for all" only when they are)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from kernelindex import registry, urls
from kernelindex.catalog.db import Catalog
from kernelindex.domain.canonical import short_digest
from kernelindex.policy.ratios import ratio
from kernelindex.policy.selection import MODE_ORDER
from kernelindex.policy.statistics import statistic_word
from kernelindex.readmodel import labels
from kernelindex.readmodel.cohorts import Cohort, cohorts_of
from kernelindex.readmodel.errors import BadParameter, NotFound
from kernelindex.readmodel.gaps import asked_gpu
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.loading import OperationData, Run, load_operation
from kernelindex.readmodel.operation_select import pick_default
from kernelindex.readmodel.pages_common import RunRef, run_ref

MAX_IMPLEMENTATIONS, MAX_GPUS = 2, 2
# A run's timing method, in a few words (the run page and the ranking caption say it at length).
TIMER_WORDS = {"stream-time": "stream time", "cupti-device-time": "CUPTI device time",
               "cuda_graph_replay": "CUDA graph replay", "per_call_events": "per-call CUDA events"}
FACTS = (("timer", "Timer"), ("protocol", "Protocol version"), ("statistic", "Statistic"), ("evidence", "Evidence"))


@dataclass
class Series(JsonModel):
    """One implementation (every version, or the one asked) on one GPU."""

    label: str
    asked: str  # what the query named (liger, torch-compile-rope@2.11.0)
    implementation: str
    implementation_slug: str
    version: str | None  # the version asked for; None: the newest measured in each cell
    gpu: str  # registry slug
    gpu_name: str
    url: str  # the implementation's page


@dataclass
class SweepCell(JsonModel):
    series: int  # index into Sweep.series
    time_ns: int | None = None  # the row's figure in its cohort (the median of its replicates there)
    statistic: str | None = None
    run: RunRef | None = None
    url: str | None = None
    version: str | None = None
    rank: str | None = None  # its rank label in its cohort; None: not ranked (note says why)
    cohort: str | None = None  # short cohort key
    cohort_label: str | None = None
    timer: str | None = None
    protocol: str | None = None
    evidence: str | None = None
    multiple: float | None = None  # its figure over the row's fastest; only in a row timed alike
    note: str | None = None


@dataclass
class SweepRow(JsonModel):
    workload: str  # short workload key
    workload_label: str
    axes: dict[str, int]
    cells: list[SweepCell]
    same_cohort: bool  # every measured cell comes from one cohort
    alike: bool  # every measured cell was timed by one timer, protocol version and statistic
    fastest: int | None = None  # the series of the fastest cell, when the row is timed alike and not tied
    note: str | None = None


@dataclass
class SweepFact(JsonModel):
    """What timed the cells: the same for all, or each series' values."""

    field: str
    label: str
    same: bool
    value: str | None  # the one value, when the same for all
    by_series: list[list[str]]  # per series, the distinct values of its measured cells


@dataclass
class Sweep(JsonModel):
    operation: str
    operation_title: str
    region: str
    regions: list[str]  # the timed regions in which every series has a measured cell
    series: list[Series]
    rows: list[SweepRow]
    facts: list[SweepFact]
    summary: str
    wins: list[int] = field(default_factory=list)  # per series, the rows timed alike where it is fastest
    url: str = ""


@dataclass(frozen=True)
class _Line:
    slug: str
    asked: str
    version: str | None
    digests: frozenset[str]


def _lines(data: OperationData) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for digest, impl in data.implementations.items():
        found.setdefault(labels.implementation_slug(impl), []).append(digest)
    return found


def _line(data: OperationData, lines: dict[str, list[str]], asked: str) -> _Line:
    """An implementation line named by its slug, or by a shorter name that names one line of the operation
    (``liger`` → liger-kernel-rope), with one version of it after '@'."""
    name, _, version = asked.partition("@")
    slug = name if name in lines else None
    if slug is None:
        starts = sorted(s for s in lines if s.startswith(name + "-"))
        slug = f"{name}-{data.slug}" if f"{name}-{data.slug}" in starts else (starts[0] if len(starts) == 1 else None)
        if slug is None and starts:
            raise BadParameter("impl", f"{name!r} names several implementations of {data.slug}: {', '.join(starts)}; "
                                       "give one slug")
    if slug is None:
        raise NotFound(f"no implementation {name!r} of {data.slug}; its implementations are "
                       f"{', '.join(sorted(lines))}")
    digests = lines[slug]
    if version:
        versions = {d: (data.implementations[d].spec.version or "") for d in digests}
        digests = [d for d, v in versions.items() if v.lower() == version]
        if not digests:
            known = ", ".join(sorted({v for v in versions.values() if v})) or "none recorded"
            raise NotFound(f"{slug} has no version {version!r} in the catalog; its versions: {known}")
    return _Line(slug, asked, version or None, frozenset(digests))


def _title(data: OperationData, line: _Line) -> str:
    return labels.implementation_title(data.implementations[min(line.digests)])


def _version_key(version: str | None) -> tuple[object, ...]:
    return labels.natural_key(version or "")


def _row_of(data: OperationData, cohort: Cohort, line: _Line) -> str | None:
    """The digest of the run standing for ``line`` in ``cohort`` (ranked or shown aside): its newest version."""
    standing = [e.item.id for e in cohort.ranked] + [a.id for a in cohort.aside]
    mine = [d for d in standing if cohort.run(d).implementation in line.digests]
    version = lambda d: _version_key(data.implementations[cohort.run(d).implementation].spec.version)  # noqa: E731
    return max(mine, key=version, default=None)


def timer_word(run: Run, data: OperationData) -> str:
    method = run.spec.timing.method
    if method:
        return TIMER_WORDS.get(method, method)
    return data.protocols[run.protocol].spec.timer.split(":")[0]


def protocol_word(data: OperationData, run: Run) -> str:
    harness = data.protocols[run.protocol].spec.harness
    return f"{harness.name} v{harness.version}" if harness.version else harness.name


def _cell(data: OperationData, cohort: Cohort, digest: str, index: int, now: datetime) -> SweepCell:
    run = cohort.run(digest)
    figure = cohort.figure(digest)
    rank = next((e.label for e in cohort.ranked if e.item.id == digest), None)
    note = None if rank else "Shown beside the ranking: it does only part of another region's work."
    return SweepCell(
        series=index, time_ns=figure, run=run_ref(data, run, now, figure), url=urls.run(run.run_id),
        statistic=statistic_word(data.protocols[run.protocol].spec.statistic, run.spec.timing.method),
        version=data.implementations[run.implementation].spec.version, rank=rank,
        cohort=short_digest(cohort.key), cohort_label=labels.cohort_label(data.environments[cohort.environment],
                                                                          data.protocols[cohort.protocol]),
        timer=timer_word(run, data), protocol=protocol_word(data, run), evidence=run.evidence, note=note)


def _missing(data: OperationData, line: _Line, gpu: registry.GpuSpec, unranked: list[Run], index: int) -> SweepCell:
    """A series with no eligible row in the workload: why, with the run that was not ranked when there is one."""
    mine = [r for r in unranked if r.implementation in line.digests and (g := data.gpu_of(r.environment)) is not None
            and g.slug == gpu.slug]
    if not mine:
        return SweepCell(series=index, note=f"Not measured on {gpu.short} in this region.")
    run = max(mine, key=lambda r: r.observed_at)
    why = run.eligibility.reasons[0].sentence if run.eligibility and run.eligibility.reasons else run.status
    return SweepCell(series=index, url=urls.run(run.run_id), note=f"Measured, not ranked: {why}")


Pair = tuple[_Line, registry.GpuSpec]  # a series before it is shown: an implementation line on a GPU


def _cells(data: OperationData, cohorts: list[Cohort], unranked: list[Run], series: list[Pair],
           now: datetime) -> list[SweepCell]:
    """One cell per series: on each GPU, the cohort the default rule leads with among those holding the most of
    that GPU's series."""
    cells: list[SweepCell] = []
    for index, (line, gpu) in enumerate(series):
        here = [c for c in cohorts if (g := data.gpu_of(c.environment)) is not None and g.slug == gpu.slug]
        siblings = [other for other, g in series if g.slug == gpu.slug]
        holding = {c.key: sum(1 for other in siblings if _row_of(data, c, other)) for c in here}
        mine = [c for c in here if _row_of(data, c, line)]
        most = max((holding[c.key] for c in mine), default=0)
        chosen = pick_default(data, [c for c in mine if holding[c.key] == most], gpu.slug)
        digest = _row_of(data, chosen, line) if chosen else None
        cells.append(_cell(data, chosen, digest, index, now) if chosen and digest
                     else _missing(data, line, gpu, unranked, index))
    return cells


def _sweep_row(data: OperationData, workload: str, cells: list[SweepCell]) -> SweepRow:
    wl = data.workloads[workload]
    measured = [c for c in cells if c.time_ns]
    alike = len({(c.timer, c.protocol, c.statistic) for c in measured}) == 1
    row = SweepRow(short_digest(workload), labels.workload_label(data.operation, wl), dict(wl.spec.axes), cells,
                   same_cohort=len({c.cohort for c in measured}) == 1 and len(measured) == len(cells), alike=alike)
    if len(measured) < 2:
        return row
    if not alike:
        differs = [label.lower() for name, label in FACTS[:3] if len({getattr(c, name) for c in measured}) > 1]
        row.note = f"Timed differently ({' and '.join(differs)}): no multiple is given."
        return row
    fastest = min(c.time_ns or 0 for c in measured)
    for c in measured:
        c.multiple = ratio(c.time_ns, fastest)
    leaders = [c for c in measured if c.time_ns == fastest]
    tied = row.same_cohort and len({c.rank for c in measured}) == 1
    row.fastest = leaders[0].series if len(leaders) == 1 and not tied else None
    if tied:
        row.note = f"Tied at rank {measured[0].rank} in their cohort."
    return row


def _facts(cells: list[list[SweepCell]], count: int) -> list[SweepFact]:
    facts = []
    for name, label in FACTS:
        by_series = [sorted({str(getattr(c, name)) for row in cells for c in row if c.series == i and c.time_ns})
                     for i in range(count)]
        every = {v for values in by_series for v in values}
        same = len(every) == 1 and all(by_series)
        facts.append(SweepFact(name, label, same, next(iter(every)) if same else None, by_series))
    return facts


def _summary(series: list[Series], rows: list[SweepRow], wins: list[int]) -> str:
    complete = [r for r in rows if sum(1 for c in r.cells if c.time_ns) == len(series)]
    alike = [r for r in complete if r.alike]
    if not complete:
        return "No workload has a figure for every series."
    if not alike:
        return ("No workload has every series measured alike (the same timer, protocol version and statistic), so "
                "no multiple is given; each cell names what timed it.")
    counts = ", ".join(f"{s.label} is fastest in {w}" for s, w in zip(series, wins, strict=True))
    tied = sum(1 for r in alike if r.fastest is None)
    text = f"Of {len(alike)} workloads where every series was measured alike: {counts}" + \
        (f"; {tied} tied." if tied else ".")
    if len(series) == 2:
        logs = [math.log(r.cells[1].time_ns / r.cells[0].time_ns) for r in alike
                if r.cells[0].time_ns and r.cells[1].time_ns]
        mean = math.exp(sum(logs) / len(logs))
        text += (f" {series[1].label} takes {mean:.2f}× the time of {series[0].label} (geometric mean; "
                 f"from {math.exp(min(logs)):.2f}× to {math.exp(max(logs)):.2f}×).")
    return text


def _default_gpu(data: OperationData, lines: list[_Line]) -> registry.GpuSpec:
    """The GPU the default rule leads with among the cohorts holding every line (else any of them)."""
    holding = [c for c in cohorts_of(data).values() if c.eligible and any(_row_of(data, c, line) for line in lines)]
    on: dict[str | None, set[_Line]] = {}
    for c in holding:
        gpu = data.gpu_of(c.environment)
        on.setdefault(gpu.slug if gpu else None, set()).update(line for line in lines if _row_of(data, c, line))
    every = [c for c in holding if (g := data.gpu_of(c.environment)) and len(on[g.slug]) == len(set(lines))]
    chosen = pick_default(data, every or holding)
    gpu = data.gpu_of(chosen.environment) if chosen else None
    if gpu is None:
        raise NotFound(f"none of {', '.join(line.slug for line in lines)} has an eligible run of {data.slug} on a GPU "
                       "of the datasheet table")
    return gpu


def _region_cohorts(data: OperationData, region: str) -> dict[str, list[Cohort]]:
    by_workload: dict[str, list[Cohort]] = {}
    for c in cohorts_of(data).values():
        if c.eligible and data.protocols[c.protocol].spec.timed_region == region:
            by_workload.setdefault(c.workload, []).append(c)
    return by_workload


def _measured_regions(data: OperationData, series: list[Pair]) -> list[str]:
    """The timed regions, forward first, in which every series has an eligible row on its GPU."""
    regions = sorted({p.spec.timed_region for p in data.protocols.values()}, key=lambda m: MODE_ORDER.get(m, 9))

    def holds(cohorts: list[Cohort], line: _Line, gpu: registry.GpuSpec) -> bool:
        return any(_row_of(data, c, line) and (g := data.gpu_of(c.environment)) is not None and g.slug == gpu.slug
                   for c in cohorts)

    found: list[str] = []
    for region in regions:
        cohorts = [c for listed in _region_cohorts(data, region).values() for c in listed]
        if all(holds(cohorts, line, gpu) for line, gpu in series):
            found.append(region)
    return found


def compare_sweep(catalog: Catalog, operation: str | None, implementations: list[str], gpus: list[str],
                  region: str | None, now: datetime) -> Sweep:
    if not operation:
        raise BadParameter("operation", "name the operation whose workloads to compare across (operation=rope)")
    if len(implementations) > MAX_IMPLEMENTATIONS or len(gpus) > MAX_GPUS:
        raise BadParameter("impl", f"compare at most {MAX_IMPLEMENTATIONS} implementations on at most {MAX_GPUS} GPUs")
    data = load_operation(catalog, operation)
    known = _lines(data)
    lines = [_line(data, known, name) for name in implementations]
    chosen = [asked_gpu(g) for g in gpus] or [_default_gpu(data, lines)]
    series = [(line, gpu) for line in lines for gpu in chosen if gpu is not None]
    if len({(line.slug, line.version, line.digests, gpu.slug) for line, gpu in series}) != len(series):
        raise BadParameter("impl", "the same implementation and GPU are named twice")
    if len(series) < 2:
        raise BadParameter("impl", "name two implementations (impl=…&impl=…), two versions of one "
                                   "(impl=slug@1.0&impl=slug@2.0), or one implementation and two GPUs")
    regions = _measured_regions(data, series)
    region = region or (regions[0] if regions else "forward")
    return _build(data, series, region, regions, now)


def _build(data: OperationData, series: list[Pair], region: str, regions: list[str],
           now: datetime) -> Sweep:
    shown = [_series(data, line, gpu) for line, gpu in series]
    by_workload = _region_cohorts(data, region)
    unranked = [r for r in data.runs if not r.eligible and data.protocols[r.protocol].spec.timed_region == region]
    rows = []
    for workload in data.workloads:
        cells = _cells(data, by_workload.get(workload, []), [r for r in unranked if r.workload == workload],
                       series, now)
        if any(c.time_ns or c.url for c in cells):
            rows.append(_sweep_row(data, workload, cells))
    rows.sort(key=lambda r: labels.natural_key(r.workload_label))
    wins = [sum(1 for r in rows if r.fastest == i) for i in range(len(series))]
    summary = " ".join([_summary(shown, rows, wins), *_unmeasured(data, series, shown, rows, region)])
    return Sweep(operation=data.slug, operation_title=data.title, region=region, regions=regions, series=shown,
                 rows=rows, facts=_facts([r.cells for r in rows], len(series)), summary=summary,
                 wins=wins, url=sweep_url(data.slug, [s.asked for s in _distinct(series)],
                                          [g.slug for g in _gpus(series)], region))


def _unmeasured(data: OperationData, series: list[Pair], shown: list[Series],
                rows: list[SweepRow], region: str) -> list[str]:
    """A sentence per series with no measured cell: where its implementation was measured in the region."""
    said = []
    for index, (line, gpu) in enumerate(series):
        if any(r.cells[index].time_ns for r in rows):
            continue
        elsewhere = sorted({g.short for cohorts in _region_cohorts(data, region).values() for c in cohorts
                            if _row_of(data, c, line) and (g := data.gpu_of(c.environment)) and g.slug != gpu.slug})
        where = f"; it was on {', '.join(elsewhere)} (add gpu=…)" if elsewhere else ""
        said.append(f"{shown[index].label}: not measured on {gpu.short} ({region}){where}.")
    return said


def _distinct(series: list[Pair]) -> list[_Line]:
    return list(dict.fromkeys(line for line, _ in series))


def _gpus(series: list[Pair]) -> list[registry.GpuSpec]:
    return list({gpu.slug: gpu for _, gpu in series}.values())


def _series(data: OperationData, line: _Line, gpu: registry.GpuSpec) -> Series:
    title = _title(data, line)
    name = f"{title} {line.version}" if line.version else title
    return Series(label=f"{name} · {gpu.short}", asked=line.asked, implementation=title, implementation_slug=line.slug,
                  version=line.version, gpu=gpu.slug, gpu_name=gpu.name, url=urls.implementation(line.slug))


def sweep_url(operation: str, implementations: Sequence[str], gpus: Sequence[str], region: str | None) -> str:
    return urls.compare_sweep(operation, implementations, gpus, region)
