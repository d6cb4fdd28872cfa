"""Peak memory beside the latency ranking: what the source measured for the selected workload on
the selected cohort's GPU. A second metric, shown, never ranked against latency."""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelindex.policy.cohorts import PEAK_MEMORY_LABEL
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.labels import implementation_slug
from kernelindex.readmodel.loading import OperationData, Run


@dataclass
class MemoryRow(JsonModel):
    run_id: str
    implementation_slug: str
    implementation_title: str
    language: str
    timed_region: str
    median_mib: float
    p20_mib: float | None
    p80_mib: float | None
    runs: int = 1  # identical measurements of one implementation (Liger's seq and hidden sweeps) shown once


@dataclass
class MemoryPanel(JsonModel):
    label: str
    rows: list[MemoryRow] = field(default_factory=list)


def memory_panel(
    data: OperationData, workload: str | None, environment: str | None, ranked_slugs: list[str]
) -> MemoryPanel | None:
    """Memory runs of this workload and environment, in the order of the latency ranking's
    implementations (then by name); None when the source measured no memory here."""
    runs = [r for r in data.memory_runs if r.workload == workload and r.environment == environment]
    if not runs:
        return None
    rows = [_row(data, r) for r in runs]
    order = {slug: i for i, slug in enumerate(ranked_slugs)}
    rows.sort(key=lambda m: (order.get(m.implementation_slug, len(order)), m.implementation_title, m.timed_region))
    return MemoryPanel(PEAK_MEMORY_LABEL, _collapse(rows))


def _collapse(rows: list[MemoryRow]) -> list[MemoryRow]:
    """One row per identical figure of one implementation and region (counting the runs)."""
    seen: dict[tuple, MemoryRow] = {}
    for row in rows:
        key = (row.implementation_slug, row.timed_region, row.median_mib, row.p20_mib, row.p80_mib)
        if key in seen:
            seen[key].runs += 1
        else:
            seen[key] = row
    return list(seen.values())


def _row(data: OperationData, run: Run) -> MemoryRow:
    impl = data.implementations[run.implementation]
    memory = run.memory
    return MemoryRow(
        run_id=run.run_id,
        implementation_slug=implementation_slug(impl),
        implementation_title=impl.metadata.title or impl.metadata.name or "",
        language=impl.spec.callable.language,
        timed_region=data.protocols[run.protocol].spec.timed_region,
        median_mib=memory.median,
        p20_mib=memory.p20,
        p80_mib=memory.p80,
    )
