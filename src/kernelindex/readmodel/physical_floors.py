"""The physical floor of each run's region on its GPU, as eligibility needs it (issue 23 item 11: a time
under the physical floor is flagged and never ranked), computed once per workload, region and GPU."""

from __future__ import annotations

from kernelindex.policy.floor import FloorEstimate, floor_estimate
from kernelindex.policy.gathers import recorded_distinct_ids
from kernelindex.readmodel.operation_data import OperationData, Run
from kernelindex.readmodel.region_work import forward_work_note, skips_floor_traffic


class PhysicalFloors:
    def __init__(self, data: OperationData) -> None:
        self.data = data
        self.known: dict[tuple[str, str, str, tuple[tuple[str, int], ...]], FloorEstimate | None] = {}

    def get(self, run: Run) -> float | None:
        """The physical floor in ns of the run's workload and timed region on its GPU (None: no
        datasheet entry, a suite, a spec the floor cannot read, or a backward that only scales a gradient
        its forward computed: it skips the traffic the floor counts, so the floor does not bound it)."""
        found = self.estimate(run)
        return found.floor_ns if found is not None else None

    def estimate(self, run: Run) -> FloorEstimate | None:
        """The floor estimate itself (its traffic by direction, its bound), computed once per workload, region,
        GPU and recorded gather count; None where ``get`` says none."""
        data = self.data
        gpu = data.gpu_of(run.environment)
        if gpu is None or run.workload not in data.workloads or run.median_ns is None:
            return None
        if skips_floor_traffic(forward_work_note(data, run)):
            return None
        region = data.protocols[run.protocol].spec.timed_region
        counted = recorded_distinct_ids(run.spec.timing.raw)  # the rows this run's gather read, when recorded
        key = (run.workload, region, gpu.slug, tuple(sorted(counted.items())))
        if key not in self.known:
            try:
                self.known[key] = floor_estimate(*data.specs_json(run.workload), gpu, region=region,
                                                 operation=data.slug, distinct_ids=counted or None)
            except (KeyError, ValueError, TypeError):  # a foreign spec the floor model cannot read
                self.known[key] = None
        return self.known[key]
