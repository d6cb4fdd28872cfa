"""Runner protocol v4's ceiling check of each run, derived once at load (issue 42 item 3): the run's compulsory bytes
over its figure against the bandwidth its GPU's runner measured for the same read/write mix at the same size
(``policy/ceilings``). A run that exceeds it by more than 3% keeps its rank, is flagged on its row and page, and
holds no record until explained."""

from __future__ import annotations

from kernelindex import registry
from kernelindex.domain.manifests import ExecutionEnvironment
from kernelindex.policy.ceilings import CeilingCheck, CeilingFigure, ceiling_check
from kernelindex.readmodel.operation_data import OperationData, Run
from kernelindex.readmodel.physical_floors import PhysicalFloors


def ceiling_table(environment: ExecutionEnvironment) -> list[CeilingFigure]:
    """The v4 ceiling table a runner recorded with its environment; for an older environment, the table its GPU's
    runner measured under v4 (``registry.measured_ceilings``); empty where neither exists."""
    own = environment.spec.ceiling_table
    if own:
        return [CeilingFigure(p.kernel, p.bytes, p.bandwidth_bytes_per_s) for p in own]
    measured = registry.measured_ceilings().get(environment.spec.hardware.product)
    return [CeilingFigure(*row) for row in measured.table] if measured else []


def run_ceiling_check(data: OperationData, run: Run, floors: PhysicalFloors) -> CeilingCheck | None:
    """The check where the run's environment has a ceiling table and its floor is bandwidth-bound (a compute-bound
    call's bytes say nothing of its time; a backward that skips its region's traffic has no floor to check). The
    floor is the one eligibility already computed for the run (``floors``)."""
    table = ceiling_table(data.environments[run.environment])
    floor = floors.estimate(run) if table else None
    if floor is None or floor.work_bound != "bandwidth" or run.median_ns is None:
        return None
    read = sum(t.bytes for t in floor.tensors if t.direction == "read")
    write = sum(t.bytes for t in floor.tensors if t.direction == "write")
    return ceiling_check(table, read, write, run.median_ns)
