"""Runner protocol v4's ceiling check of each run, derived once at load (issue 42 item 3): the run's compulsory bytes
over its figure against the bandwidth its GPU's runner measured for the same read/write mix at the same size
(``policy/ceilings``). A run that exceeds it by more than 3% keeps its rank, is flagged on its row and page, and
holds no record until explained."""

from __future__ import annotations

from kernelindex import registry
from kernelindex.domain.manifests import ExecutionEnvironment
from kernelindex.policy.ceilings import CeilingCheck, CeilingFigure, ceiling_check
from kernelindex.policy.floor import floor_estimate
from kernelindex.policy.gathers import recorded_distinct_ids
from kernelindex.readmodel.operation_data import OperationData, Run
from kernelindex.readmodel.region_work import forward_work_note, skips_floor_traffic


def ceiling_table(environment: ExecutionEnvironment) -> list[CeilingFigure]:
    """The v4 ceiling table a runner recorded with its environment; for an older environment, the table its GPU's
    runner measured under v4 (``registry.measured_ceilings``); empty where neither exists."""
    own = environment.spec.ceiling_table
    if own:
        return [CeilingFigure(p.kernel, p.bytes, p.bandwidth_bytes_per_s) for p in own]
    measured = registry.measured_ceilings().get(environment.spec.hardware.product)
    return [CeilingFigure(*row) for row in measured.table] if measured else []


def run_ceiling_check(data: OperationData, run: Run) -> CeilingCheck | None:
    """The check where the run's environment has a ceiling table and its floor is bandwidth-bound (a compute-bound
    call's bytes say nothing of its time; a backward that skips its region's traffic has no floor to check)."""
    table = ceiling_table(data.environments[run.environment])
    gpu = data.gpu_of(run.environment)
    if not table or gpu is None or run.median_ns is None or run.workload not in data.workloads:
        return None
    if skips_floor_traffic(forward_work_note(data, run)):
        return None
    region = data.protocols[run.protocol].spec.timed_region
    try:
        floor = floor_estimate(*data.specs_json(run.workload), gpu, region=region, operation=data.slug,
                               distinct_ids=recorded_distinct_ids(run.spec.timing.raw) or None)
    except (KeyError, ValueError, TypeError):  # a foreign spec the floor model cannot read
        return None
    if floor.bound != "bandwidth":
        return None
    read = sum(t.bytes for t in floor.tensors if t.direction == "read")
    write = sum(t.bytes for t in floor.tensors if t.direction == "write")
    return ceiling_check(table, read, write, run.median_ns)
