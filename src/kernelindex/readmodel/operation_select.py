"""Which workload and cohort an operation page shows: the URL's ``?workload=`` / ``?cohort=`` /
``?gpu=``, else the defaults of policy.selection (docs/design.md §4 "Defaults"): the best evidence first."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NoReturn

from kernelindex import registry, urls
from kernelindex.domain.manifests import stored_json
from kernelindex.policy.cohorts import former_cohort_keys
from kernelindex.policy.evidence import LEVEL_ORDER, LEVELS, VERIFIED_LEVELS
from kernelindex.policy.selection import (
    CohortChoice,
    WorkloadChoice,
    architecture_age,
    default_cohort,
    default_workload,
    leading,
)
from kernelindex.readmodel.cohorts import Cohort
from kernelindex.readmodel.errors import BadSelection, CohortMoved
from kernelindex.readmodel.floors import floor_bytes
from kernelindex.readmodel.labels import axis_order, cohort_key_short, workload_key
from kernelindex.readmodel.loading import OperationData
from kernelindex.readmodel.operation_views import OtherGpu


def cohort_choice(data: OperationData, c: Cohort) -> CohortChoice:
    """What the default rule reads of a cohort: its size, region, GPU and architecture, age and evidence."""
    gpu = data.gpu_of(c.environment)
    eligible = c.eligible
    return CohortChoice(
        c.key, len(eligible), data.protocols[c.protocol].spec.timed_region, gpu.slug if gpu else None,
        min((r.observed_at for r in eligible), default=None),
        verified=any(r.evidence in VERIFIED_LEVELS for r in eligible),
        architecture=gpu.architecture if gpu else data.environments[c.environment].spec.hardware.architecture,
        workload=c.workload,
    )


def pick_default(data: OperationData, cohorts: Iterable[Cohort], asked_gpu: str | None = None) -> Cohort | None:
    """The cohort the rule leads with among ``cohorts`` (``asked_gpu``: a GPU slug the query names)."""
    listed = [c for c in cohorts if c.eligible]
    key = default_cohort([cohort_choice(data, c) for c in listed], registry.priority_gpus(),
                         (asked_gpu,) if asked_gpu else ())
    return next((c for c in listed if c.key == key), None)


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


def _pick_workload(data: OperationData, requested: str | None, eligible_by_workload: dict[str, int],
                   all_cohorts: dict[str, Cohort], asked_gpu: str | None) -> str | None:
    if requested:
        for digest in data.workloads:
            if requested in (digest, workload_key(digest)):
                return digest
        raise BadSelection(f"workload {requested!r} is not a workload of {data.slug}; pick one from the workload list")
    choices = [cohort_choice(data, c) for c in all_cohorts.values() if c.eligible]
    lead = {c.workload for c in leading(choices, (asked_gpu,) if asked_gpu else ())}
    return default_workload(_workload_choices(data, eligible_by_workload), lead)


def _pick_cohort(data: OperationData, requested: str | None, cohorts: list[Cohort],
                 asked_gpu: str | None) -> Cohort | None:
    if requested:
        for c in cohorts:
            if requested in (c.key, cohort_key_short(c.key)):
                return c
        raise BadSelection(
            f"cohort {requested!r} is not a cohort of the selected workload; pick one from Current records"
        )
    return pick_default(data, cohorts, asked_gpu)


def moved_cohort(data: OperationData, all_cohorts: dict[str, Cohort], requested: str) -> Cohort | None:
    """The cohort that an earlier keying rule keyed ``requested`` (its full or short key), if any."""
    for c in all_cohorts.values():
        for environment, metric in {(r.environment, r.metric) for r in c.runs}:
            spec = stored_json(data.environments[environment])["spec"]
            former = former_cohort_keys(c.workload, c.protocol, spec, environment, metric)
            if requested in former or requested in {cohort_key_short(k) for k in former}:
                return c
    return None


def _refuse_cohort(data: OperationData, all_cohorts: dict[str, Cohort], requested: str, message: str) -> NoReturn:
    """A ?cohort= that names no cohort: moved, when an earlier rule keyed a cohort so, else refused."""
    if (moved := moved_cohort(data, all_cohorts, requested)) is not None:
        raise CohortMoved(requested, cohort_key_short(moved.key))
    raise BadSelection(message)


def select(
    data: OperationData, all_cohorts: dict[str, Cohort], eligible_by_workload: dict[str, int],
    workload: str | None, cohort: str | None, asked: registry.GpuSpec | None,
) -> tuple[str | None, list[Cohort], Cohort | None]:
    """The selected workload, its cohorts and the selected cohort. An asked GPU leads the default
    workload and cohort to its cohorts (when it has any); then the rule of policy.selection."""
    if cohort and not workload:
        match = next((c for c in all_cohorts.values() if cohort in (c.key, cohort_key_short(c.key))), None)
        workload = match.workload if match else None
        if match is None:
            _refuse_cohort(data, all_cohorts, cohort, f"cohort {cohort!r} is not a cohort of {data.slug}")
    asked_gpu = asked.slug if asked else None
    selected_workload = _pick_workload(data, workload, eligible_by_workload, all_cohorts, asked_gpu)
    workload_cohorts = [c for c in all_cohorts.values() if c.workload == selected_workload and c.eligible]
    if cohort and not any(cohort in (c.key, cohort_key_short(c.key)) for c in workload_cohorts):
        _refuse_cohort(data, all_cohorts, cohort,
                       f"cohort {cohort!r} is not a cohort of the selected workload; pick one from Current records")
    return selected_workload, workload_cohorts, _pick_cohort(data, cohort, workload_cohorts, asked_gpu)


def other_gpus(data: OperationData, cohorts: list[Cohort], selected: Cohort | None,
               workload: str | None) -> list[OtherGpu]:
    """The GPUs other than the selected cohort's that measured the workload, newest architecture first, each
    linked as ``?gpu=`` (with the asked ``workload``, when the URL named one): the view the rule would lead
    with there."""
    shown = data.gpu_of(selected.environment) if selected else None
    found: dict[str, tuple[registry.GpuSpec, str]] = {}
    for c in cohorts:
        gpu = data.gpu_of(c.environment)
        if gpu is None or (shown is not None and gpu.slug == shown.slug) or not c.eligible:
            continue
        level = min((r.evidence for r in c.eligible), key=lambda e: LEVEL_ORDER.get(e, len(LEVELS)))
        if gpu.slug not in found or LEVEL_ORDER[level] < LEVEL_ORDER[found[gpu.slug][1]]:
            found[gpu.slug] = (gpu, level)
    word = {slug: (g.short.lower().replace(" ", "-") if registry.gpu_slug(g.short) == slug else slug)
            for slug, (g, _) in found.items()}
    ordered = sorted(found.values(), key=lambda f: (-architecture_age(f[0].architecture)[0],
                                                    -architecture_age(f[0].architecture)[1], f[0].short))
    return [OtherGpu(g.short, g.slug, level, urls.operation(data.slug, ("gpu", word[g.slug]), ("workload", workload)))
            for g, level in ordered]
