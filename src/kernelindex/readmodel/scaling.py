"""'Scaling by <axis>': the numeric axis along which the most workloads vary while every other
axis, the protocol and the environment are held constant (≥ 3 points)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from kernelindex.domain.specs import WorkloadCaseBody
from kernelindex.policy.ratios import ratio
from kernelindex.readmodel.cohorts import Cohort
from kernelindex.readmodel.floors import gpu_floor
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.labels import (
    axis_order,
    gpu_label,
    implementation_slug,
    implementation_title,
    protocol_label,
)
from kernelindex.readmodel.loading import OperationData, Run

MAX_SERIES = 5
MIN_POINTS = 3
LOG_RANGE = 10.0


@dataclass
class ScalingPoint(JsonModel):
    x: int
    median_ns: int
    run_id: str
    workload: str


@dataclass
class ScalingSeries(JsonModel):
    implementation: str
    title: str
    points: list[ScalingPoint]


@dataclass
class ScalingChart(JsonModel):
    axis: str
    held_constant: str
    log_x: bool
    log_y: bool
    series: list[ScalingSeries]
    floor: list[dict]
    sizes_total: int | None = None  # when the chart was thinned to fewer sizes (readmodel.folding)


def _group_key(spec: WorkloadCaseBody, axis: str) -> tuple:
    axes = tuple(sorted((k, v) for k, v in spec.axes.items() if k != axis))
    return (axes, tuple(sorted(spec.dtypes.items())), tuple(sorted(spec.params.items())))


def _pick_axis(data: OperationData, selected_workload: str, workloads: set[str]) -> tuple[str, list[str]] | None:
    selected_spec = data.workloads[selected_workload].spec
    best: tuple[str, list[str]] | None = None
    for axis in axis_order(data.operation):
        if axis not in selected_spec.axes:
            continue
        key = _group_key(selected_spec, axis)
        group = [w for w in workloads if _group_key(data.workloads[w].spec, axis) == key]
        if len(group) >= MIN_POINTS and (best is None or len(group) > len(best[1])):
            best = (axis, group)
    return best


def scaling_chart(data: OperationData, selected: Cohort, all_cohorts: dict[str, Cohort]) -> ScalingChart | None:
    same_setup = [
        c
        for c in all_cohorts.values()
        if c.protocol == selected.protocol and c.environment == selected.environment and c.eligible
    ]
    picked = _pick_axis(data, selected.workload, {c.workload for c in same_setup})
    if picked is None:
        return None
    axis, group = picked
    # implementation line → workload → its best row (a row's figure summarises its replicates)
    best: dict[str, dict[str, tuple[Run, int]]] = defaultdict(dict)
    for cohort in same_setup:
        if cohort.workload not in group:
            continue
        for entry in cohort.ranked:
            run = cohort.run(entry.item.id)
            line = implementation_slug(data.implementations[run.implementation])
            current = best[line].get(run.workload)
            if current is None or entry.item.median_ns < current[1]:
                best[line][run.workload] = (run, entry.item.median_ns)
    series = [_series(data, line, runs, axis) for line, runs in best.items()]
    at_selected = {
        s.implementation: next((p.median_ns for p in s.points if p.workload == selected.workload), None) for s in series
    }
    series.sort(
        key=lambda s: (at_selected[s.implementation] is None, at_selected[s.implementation] or 0, s.implementation)
    )
    series = series[:MAX_SERIES]
    floor = _floor_points(data, group, axis, selected.environment,
                         data.protocols[selected.protocol].spec.timed_region)
    xs = [p.x for s in series for p in s.points]
    ys = [p.median_ns for s in series for p in s.points] + [f["floor_ns"] for f in floor]
    return ScalingChart(
        axis=axis,
        held_constant=" · ".join(
            (gpu_label(data.environments[selected.environment]), protocol_label(data.protocols[selected.protocol]))
        ),
        log_x=(ratio(max(xs), min(xs)) or 0) >= LOG_RANGE,
        # a log axis of sizes gets a log latency axis too (power laws read as lines)
        log_y=(ratio(max(ys), max(min(ys), 1)) or 0) >= LOG_RANGE or (ratio(max(xs), min(xs)) or 0) >= LOG_RANGE,
        series=series,
        floor=floor,
    )


def _series(data: OperationData, line: str, runs: dict[str, tuple[Run, int]], axis: str) -> ScalingSeries:
    any_run = next(iter(runs.values()))[0]
    points = sorted(
        (
            ScalingPoint(data.workloads[w].spec.axes[axis], figure, r.run_id, w)
            for w, (r, figure) in runs.items()
        ),
        key=lambda p: p.x,
    )
    return ScalingSeries(line, implementation_title(data.implementations[any_run.implementation]), points)


def _floor_points(data: OperationData, group: list[str], axis: str, environment: str, region: str) -> list[dict]:
    """The physical floor of the chart's timed region at each point."""
    gpu = data.gpu_of(environment)
    if gpu is None:
        return []
    points = []
    for w in group:
        estimate = gpu_floor(data, w, gpu, region)
        points.append({"x": data.workloads[w].spec.axes[axis], "floor_ns": estimate.floor_ns})
    return sorted(points, key=lambda p: p["x"])
