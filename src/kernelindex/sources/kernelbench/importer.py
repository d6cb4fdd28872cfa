"""``ki import kernelbench``: snapshot → read → place every entry → check each file's pairing with its
problem set → map → report → publish (one transaction)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelindex import registry
from kernelindex.catalog.collector import collector_paused
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.publish import publish_manifests
from kernelindex.domain.manifests import Manifest
from kernelindex.policy.floor import floor_estimate
from kernelindex.sources.base import FileTransport, Transport
from kernelindex.sources.kernelbench.mapping import Entry, MappedKernelBench, Mapper, Placed, entries_of
from kernelindex.sources.kernelbench.operations import ProblemNotMapped
from kernelindex.sources.kernelbench.pairing import Timed, suspect_levels
from kernelindex.sources.kernelbench.problem_file import ProblemFileError
from kernelindex.sources.kernelbench.read import KernelBenchData, read_kernelbench, shipped_path
from kernelindex.sources.kernelbench.runs import SOURCE, EntryRefused

SUSPECT = "suspect pairing of the timing file's level with its problem set (physics check; see the report)"
UNDER_FLOOR = ("under the physical floor of its GPU for the paired problem's shapes (in a level whose pairing "
               "holds: a timing of inputs still in the L2 cache, or a count the kernel beats, e.g. Winograd); "
               "a physical floor is never beaten by what it bounds, so the entry is not a run of these shapes")


@dataclass
class KernelBenchReport:
    locator: str
    snapshot_digest: str
    mapped: MappedKernelBench = field(default_factory=MappedKernelBench)
    new: dict[str, int] = field(default_factory=dict)
    existing: dict[str, int] = field(default_factory=dict)
    published: bool = False

    def to_json(self) -> dict[str, object]:
        m = self.mapped
        return {
            "source": SOURCE, "locator": self.locator, "snapshot_digest": self.snapshot_digest,
            "entries": m.entries, "timed_runs": m.timed, "failed_runs": m.failed,
            "refused_total": sum(m.refused.values()),
            "refused": dict(sorted(m.refused.items(), key=lambda kv: (-kv[1], kv[0]))),
            "suspect_pairings": dict(sorted(m.suspect.items())),
            "gpus": dict(m.gpus.most_common()), "operations": m.operations, "workloads": m.workloads,
            "problems_not_mapped": dict(sorted(m.problems_not_mapped.items())),
            "new": self.new, "existing": self.existing, "published": self.published,
        }


def _timed(mapper: Mapper, placed: list[Placed]) -> list[tuple[Placed, Timed]]:
    """Each timed entry with the floor of its paired problem on its GPU (None where not counted)."""
    floors: dict[tuple[str, str], float | None] = {}
    out = []
    for p in placed:
        if p.entry.value is None or not isinstance(p.entry.value.get("mean"), int | float):
            continue
        gpu = registry.gpu_for_product(p.hardware)
        assert gpu is not None  # place() refused unknown GPUs
        key = (p.problem.digest, gpu.slug)
        if key not in floors:
            try:
                refs = mapper.refs(p)
                operation = mapper.operation(p.problem)
                op = registry.floor_spec(operation, operation.model_dump(mode="json")["spec"])
                floors[key] = floor_estimate(op, refs["workload"].model_dump(mode="json")["spec"], gpu).floor_ns \
                    if op["outputs"] else None  # tensors not counted: no floor
            except ProblemNotMapped:
                floors[key] = None
        timing = p.entry.timing
        out.append((p, Timed(timing.file, p.entry.level, timing.problems, timing.configuration, gpu.slug,
                             p.problem.digest, float(p.entry.value["mean"]) * 1e6, floors[key])))
    return out


def map_kernelbench(data: KernelBenchData, counted: dict[str, dict[str, Any]] | None = None) -> MappedKernelBench:
    """``counted``: the problems' tensors and FLOPs (default: registry/sources/kernelbench/problems.json)."""
    mapper = Mapper(data, counted)
    result = mapper.result
    placed: list[Placed] = []
    for timing in data.timings:
        for entry in entries_of(timing):
            result.entries += 1
            try:
                placed.append(mapper.place(entry))
            except (EntryRefused, ProblemFileError) as exc:
                result.refused[str(exc)] += 1
    timed = _timed(mapper, placed)
    suspect = suspect_levels([t for _, t in timed])
    under_floor = {id(p) for p, t in timed if t.floor_ns is not None and t.mean_ns < t.floor_ns}
    result.suspect = {f"{file} {level}": why for (file, level), why in suspect.items()}
    for p in placed:
        if _key(p.entry) in suspect:
            result.refused[SUSPECT] += 1
        elif id(p) in under_floor:
            result.refused[UNDER_FLOOR] += 1
        else:
            mapper.add_run(p)
    mapper.every_problem()
    return result


def _key(entry: Entry) -> tuple[str, str]:
    return entry.timing.file, entry.level


@collector_paused()
def import_kernelbench(
    catalog: Catalog, transport: Transport | None = None, *, dry_run: bool, actor: str,
    counted: dict[str, dict[str, Any]] | None = None,
) -> KernelBenchReport:
    snapshot = (transport or FileTransport(shipped_path())).fetch()
    report = KernelBenchReport(snapshot.locator, snapshot.digest)
    report.mapped = map_kernelbench(read_kernelbench(snapshot.content, snapshot.locator), counted)
    manifests: list[Manifest] = report.mapped.manifests
    result = publish_manifests(catalog, manifests, actor=actor, source=SOURCE, snapshot_digest=snapshot.digest,
                               locator=snapshot.locator, dry_run=dry_run, refused_sources=registry.refused_sources())
    report.new, report.existing, report.published = dict(result.new), dict(result.existing), not dry_run
    return report
