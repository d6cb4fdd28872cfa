"""The shape × implementation table of an operation page: for the selected cohort's GPU and timed
region, every workload (numeric order) against every implementation — best latency and speed-up vs
the baseline in that workload's cohort. What kernel engineers compare first; ranks stay per cohort."""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelindex.policy.selection import baseline_multiple
from kernelindex.readmodel.cohorts import Cohort
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.labels import (
    axis_order,
    cohort_key_short,
    cohort_label,
    implementation_title,
    workload_key,
    workload_label,
)
from kernelindex.readmodel.loading import OperationData

MAX_COLUMNS = 6


@dataclass
class ShapeCell(JsonModel):
    median_ns: int
    run_id: str
    vs_baseline: float | None  # baseline median ÷ this median (> 1: faster than the baseline)
    leader: bool


@dataclass
class ShapeRow(JsonModel):
    workload: str
    label: str
    axes: dict[str, int]
    cohort: str
    cells: list[ShapeCell | None]


@dataclass
class ShapeTable(JsonModel):
    setup: str  # GPU · timed region · harness, held constant down the table
    implementations: list[str]
    rows: list[ShapeRow] = field(default_factory=list)
    total_rows: int | None = None  # when ``rows`` holds only the workloads of one page (readmodel.folding)


def shape_table(data: OperationData, selected: Cohort, all_cohorts: dict[str, Cohort]) -> ShapeTable | None:
    """Workloads measured in the selected cohort's environment and protocol, ≥ 2 of them."""
    cohorts = [c for c in all_cohorts.values() if c.environment == selected.environment
               and c.protocol == selected.protocol and c.ranked]
    if len(cohorts) < 2:
        return None
    order = axis_order(data.operation)
    cohorts.sort(key=lambda c: tuple(data.workloads[c.workload].spec.axes.get(a, 0) for a in order))
    best = [_best_per_implementation(c) for c in cohorts]
    columns = _columns(data, best)
    table = ShapeTable(cohort_label(data.environments[selected.environment], data.protocols[selected.protocol]),
                       [implementation_title(data.implementations[d]) for d in columns])
    for cohort, per_impl in zip(cohorts, best, strict=True):
        figure = {d: cohort.figure(r.digest) or 0 for d, r in per_impl.items()}  # rows' figures (replicates' median)
        baselines = [figure[d] for d in per_impl if data.implementations[d].spec.role == "baseline" and figure[d]]
        leader = min(figure.values())
        cells: list[ShapeCell | None] = []
        for digest in columns:
            run = per_impl.get(digest)
            is_baseline = data.implementations[digest].spec.role == "baseline"
            cells.append(ShapeCell(figure[digest], run.run_id,
                                   None if is_baseline else baseline_multiple(figure[digest], baselines),
                                   figure[digest] == leader) if run else None)
        workload = data.workloads[cohort.workload]
        table.rows.append(ShapeRow(workload_key(cohort.workload), workload_label(data.operation, workload),
                                   dict(workload.spec.axes), cohort_key_short(cohort.key), cells))
    return table


def _best_per_implementation(cohort: Cohort) -> dict:
    best: dict = {}
    for entry in cohort.ranked:  # ascending median: the first run of an implementation is its best
        run = cohort.run(entry.item.id)
        best.setdefault(run.implementation, run)
    return best


def _columns(data: OperationData, best: list[dict]) -> list[str]:
    """Implementations measured on the most workloads first (baselines last), at most MAX_COLUMNS."""
    counts: dict[str, int] = {}
    for per_impl in best:
        for digest in per_impl:
            counts[digest] = counts.get(digest, 0) + 1

    def key(d: str) -> tuple:
        baseline = data.implementations[d].spec.role == "baseline"
        return (baseline, -counts[d], implementation_title(data.implementations[d]))

    return sorted(counts, key=key)[:MAX_COLUMNS]
