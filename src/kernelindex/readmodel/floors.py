"""The floors of one loaded operation, per workload, GPU and timed region: the one place the read model
enters the floor rule (``policy.floor.floor_estimate``). Each estimate is computed once per loaded
operation and kept on it; the key holds the GPU's attainable figures, since the copies of an operation
that differ only in them share what is kept (``OperationData.memo``)."""

from __future__ import annotations

from collections.abc import Mapping

from kernelindex.domain.gpus import GpuSpec
from kernelindex.policy.floor import FloorEstimate, floor_estimate
from kernelindex.policy.gathers import recorded_distinct_ids
from kernelindex.policy.traffic import compulsory_traffic
from kernelindex.readmodel.cohorts import Cohort
from kernelindex.readmodel.operation_data import OperationData, Run

Floors = tuple[FloorEstimate, FloorEstimate | None]  # (physical floor, attainable floor)


def gpu_floor(data: OperationData, workload: str, gpu: GpuSpec, region: str = "forward", *,
              distinct_ids: Mapping[str, int] | None = None) -> FloorEstimate:
    """The physical floor (datasheet peaks) of ``workload``'s ``region`` on ``gpu``, measured there or not."""
    ids = tuple(sorted(distinct_ids.items())) if distinct_ids else None
    return data.derived(("floor", workload, gpu.slug, region, ids), lambda: floor_estimate(
        *data.specs_json(workload), gpu, region=region, operation=data.slug, distinct_ids=distinct_ids))


def floor_for(
    data: OperationData, workload: str, environment: str, protocol: str | None = None, *,
    distinct_ids: Mapping[str, int] | None = None,
) -> Floors | None:
    """(physical floor, attainable floor) of the protocol's timed region (forward without one); the
    attainable floor is None where the GPU was never measured by a runner nor ran a verified run.
    ``distinct_ids``: a run's recorded distinct ids (``run_floors``), so a gather counts the rows it read."""
    gpu = data.gpu_of(environment)
    if gpu is None:
        return None
    op_spec, _ = data.specs_json(workload)
    if not op_spec["inputs"] and not op_spec["outputs"]:
        return None  # an operation that declares no tensors (their shapes not known): no floor to estimate
    region = data.protocols[protocol].spec.timed_region if protocol else "forward"
    physical = gpu_floor(data, workload, gpu, region, distinct_ids=distinct_ids)
    seen = data.attainable.get(gpu.slug)
    if seen is None:
        return physical, None
    ids = tuple(sorted(distinct_ids.items())) if distinct_ids else None
    attainable = data.derived(("attainable-floor", workload, gpu.slug, region, ids, seen), lambda: floor_estimate(
        *data.specs_json(workload), gpu, region=region, operation=data.slug, attainable=seen,
        distinct_ids=distinct_ids))
    return physical, attainable


def run_floors(data: OperationData, run: Run) -> Floors | None:
    """The floors of one run: its workload's, counting the gathered rows the run recorded reading (issue 20
    item 2); a run that recorded no count has its workload's floors (the expectation, labelled)."""
    return floor_for(data, run.workload, run.environment, run.protocol,
                     distinct_ids=recorded_distinct_ids(run.spec.timing.raw) or None)


def cohort_floors(data: OperationData, cohort: Cohort) -> Floors | None:
    """The floors a cohort's panel shows: where every eligible run recorded its distinct ids, the fewest
    any of them read (so the floor bounds each row); otherwise the workload's (the expectation)."""
    counts = [recorded_distinct_ids(r.spec.timing.raw) for r in cohort.eligible]
    names = set.intersection(*(set(c) for c in counts)) if counts else set()
    fewest = {name: min(c[name] for c in counts) for name in names}
    return floor_for(data, cohort.workload, cohort.environment, cohort.protocol, distinct_ids=fewest or None)


def own_floors(data: OperationData, run: Run) -> Floors | None:
    """A run's floors when it recorded the distinct ids it read (its row is held to them), else None."""
    return run_floors(data, run) if recorded_distinct_ids(run.spec.timing.raw) else None


def floor_bytes(data: OperationData, workload: str) -> int:
    """The compulsory bytes of the workload's forward (what the default workload rule weighs)."""
    return data.derived(("floor-bytes", workload),
                        lambda: sum(t.bytes for t in compulsory_traffic(*data.specs_json(workload))))
