"""Which workload and cohort an operation page shows: the URL's ``?workload=`` / ``?cohort=`` /
``?gpu=``, else the defaults of policy.selection (docs/design.md §4 "Defaults")."""

from __future__ import annotations

from kernelindex import registry
from kernelindex.policy.selection import CohortChoice, WorkloadChoice, default_cohort, default_workload
from kernelindex.readmodel.cohorts import Cohort
from kernelindex.readmodel.errors import BadSelection
from kernelindex.readmodel.gaps import on_gpu
from kernelindex.readmodel.labels import axis_order, cohort_key_short, workload_key
from kernelindex.readmodel.loading import OperationData
from kernelindex.readmodel.rows import floor_bytes


def _workload_choices(data: OperationData, eligible_by_workload: dict[str, int]) -> list[WorkloadChoice]:
    order = axis_order(data.operation)
    return [
        WorkloadChoice(
            key=d,
            eligible_runs=n,
            floor_bytes=floor_bytes(data, d),
            canonical=tuple(data.workloads[d].spec.axes.get(a, 0) for a in order),
        )
        for d, n in eligible_by_workload.items()
    ]


def _pick_workload(data: OperationData, requested: str | None, eligible_by_workload: dict[str, int]) -> str | None:
    if requested:
        for digest in data.workloads:
            if requested in (digest, workload_key(digest)):
                return digest
        raise BadSelection(f"workload {requested!r} is not a workload of {data.slug}; pick one from the workload list")
    return default_workload(_workload_choices(data, eligible_by_workload))


def _pick_cohort(data: OperationData, requested: str | None, cohorts: list[Cohort]) -> Cohort | None:
    if requested:
        for c in cohorts:
            if requested in (c.key, cohort_key_short(c.key)):
                return c
        raise BadSelection(
            f"cohort {requested!r} is not a cohort of the selected workload; pick one from Current records"
        )
    choices = []
    for c in cohorts:
        gpu = data.gpu_of(c.environment)
        first = min((r.observed_at for r in c.eligible), default=None)
        choices.append(
            CohortChoice(
                c.key,
                len(c.eligible),
                data.protocols[c.protocol].spec.timed_region,
                gpu.slug if gpu else None,
                first,
            )
        )
    key = default_cohort(choices, registry.priority_gpus())
    return next((c for c in cohorts if c.key == key), None)


def select(
    data: OperationData, all_cohorts: dict[str, Cohort], eligible_by_workload: dict[str, int],
    workload: str | None, cohort: str | None, asked: registry.GpuSpec | None,
) -> tuple[str | None, list[Cohort], Cohort | None]:
    """The selected workload, its cohorts and the selected cohort. An asked GPU narrows the default
    workload to those measured on it (when any are) and the default cohort to its cohorts."""
    if cohort and not workload:
        match = next((c for c in all_cohorts.values() if cohort in (c.key, cohort_key_short(c.key))), None)
        workload = match.workload if match else None
        if match is None:
            raise BadSelection(f"cohort {cohort!r} is not a cohort of {data.slug}")
    choices = eligible_by_workload
    if asked and not workload:
        measured_there = {c.workload for c in on_gpu(data, all_cohorts.values(), asked.slug)}
        choices = {w: n for w, n in eligible_by_workload.items() if w in measured_there} or eligible_by_workload
    selected_workload = _pick_workload(data, workload, choices)
    workload_cohorts = [c for c in all_cohorts.values() if c.workload == selected_workload and c.eligible]
    if cohort and not any(cohort in (c.key, cohort_key_short(c.key)) for c in workload_cohorts):
        raise BadSelection(f"cohort {cohort!r} is not a cohort of the selected workload; pick one from Current records")
    there = on_gpu(data, workload_cohorts, asked.slug) if asked and not cohort else []
    return selected_workload, workload_cohorts, _pick_cohort(data, cohort, there or workload_cohorts)
