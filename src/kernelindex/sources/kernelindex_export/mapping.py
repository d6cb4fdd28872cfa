"""Walk the export's runs source by source and build our manifests, counting every row:
discovered, published, refused by source policy, skipped by reason, failed-run evidence."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from kernelindex import registry
from kernelindex.domain.manifests import Manifest
from kernelindex.policy.library_lines import FLASHINFER_PROJECT
from kernelindex.sources.base import source_manifest
from kernelindex.sources.kernelindex_export.implementations import library_call, map_implementation, map_project
from kernelindex.sources.kernelindex_export.operations import RowSkipped, map_operation, map_suite, map_workload
from kernelindex.sources.kernelindex_export.read import ExportTables
from kernelindex.sources.kernelindex_export.runs import map_environment, map_protocol, map_run

TABLES = ("benchmark_runs", "measurements", "operations", "workloads", "implementations", "projects", "artifacts")
Progress = Callable[[int, int], None]


@dataclass
class TableCounts:
    discovered: int = 0
    published: int = 0
    refused: int = 0
    skipped: Counter = field(default_factory=Counter)
    failed_evidence: int = 0

    def to_json(self) -> dict[str, object]:
        return {"discovered": self.discovered, "published": self.published, "refused": self.refused,
                "skipped": dict(self.skipped), "failed_evidence": self.failed_evidence}


@dataclass
class MappedSource:
    manifests: list[Manifest] = field(default_factory=list)
    counts: dict[str, TableCounts] = field(default_factory=lambda: {t: TableCounts() for t in TABLES})


DAMAGED = (KeyError, TypeError, AttributeError, IndexError, ValueError)


def damaged(exc: Exception) -> RowSkipped:
    """A row the mapping failed on (a field missing or of the wrong type) as a skip reason, not a traceback."""
    if isinstance(exc, RowSkipped):
        return exc
    if isinstance(exc, KeyError):
        return RowSkipped(f"damaged row: a field or a referenced row is missing ({str(exc.args[0])[:80]!r})")
    return RowSkipped(f"damaged row: a field has the wrong type or value ({type(exc).__name__})")


class _Memo:
    """Map each referenced row once; remember a failure's reason so every run using it says why."""

    def __init__(self) -> None:
        self.done: dict[tuple, Manifest | RowSkipped] = {}

    def get(self, key: tuple, make: Callable[[], Manifest]) -> Manifest:
        if key not in self.done:
            try:
                self.done[key] = make()
            except DAMAGED as exc:
                self.done[key] = damaged(exc)
        found = self.done[key]
        if isinstance(found, RowSkipped):
            raise found
        return found


@dataclass
class ExportMapper:
    tables: ExportTables
    progress: Progress | None = None

    def __post_init__(self) -> None:
        t = self.tables
        self.operations, self.workloads = t.by_id("operations"), t.by_id("workloads")
        self.implementations, self.projects = t.by_id("implementations"), t.by_id("projects")
        self.artifacts = {a["contentDigest"]: a for a in t.rows["artifacts"]}
        self.measurements: dict[str, list[dict]] = defaultdict(list)
        for m in t.rows["measurements"]:
            self.measurements[m["runId"]].append(m)
        self.aliases: dict[str, list[str]] = defaultdict(list)
        for a in t.rows["operation_aliases"]:
            self.aliases[a["operationId"]].append(a["alias"])
        self.memo = _Memo()
        self.done_runs = 0

    def runs_by_source(self) -> dict[str, list[dict]]:
        slugs = {s["id"]: s["slug"] for s in self.tables.rows["sources"]}
        grouped: dict[str, list[dict]] = defaultdict(list)
        for run in self.tables.rows["benchmark_runs"]:
            grouped[slugs.get(run["sourceId"], run["sourceId"])].append(run)
        return grouped

    def discover(self, runs: list[dict]) -> MappedSource:
        mapped = MappedSource()
        for table, rows in self._referenced(runs).items():
            mapped.counts[table].discovered = len(rows)
        return mapped

    def refuse(self, runs: list[dict]) -> MappedSource:
        mapped = self.discover(runs)
        for counts in mapped.counts.values():
            counts.refused = counts.discovered
        return mapped

    def skip(self, runs: list[dict], reason: str) -> MappedSource:
        mapped = self.discover(runs)
        for counts in mapped.counts.values():
            counts.skipped[reason] = counts.discovered
        return mapped

    def _referenced(self, runs: list[dict]) -> dict[str, set[str]]:
        refs: dict[str, set[str]] = {t: set() for t in TABLES}
        for run in runs:
            refs["benchmark_runs"].add(run["id"])
            refs["measurements"].update(m["id"] for m in self.measurements.get(run["id"], []))
            workload = self.workloads.get(run["workloadId"], {})
            refs["workloads"].add(run["workloadId"])
            refs["operations"].add(workload.get("operationId", "?"))
            impl = self.implementations.get(run["implementationId"], {})
            refs["implementations"].add(run["implementationId"])
            refs["projects"].add(impl.get("projectId", "?"))
            digest = ((impl.get("manifest") or {}).get("spec", {}).get("source") or {}).get("contentDigest")
            if isinstance(digest, str) and digest in self.artifacts:
                refs["artifacts"].add(digest)
        return refs

    def publishable(self, slug: str, runs: list[dict], total: int) -> MappedSource:
        policy = registry.source_policy(slug)
        assert policy is not None and not policy.refused
        mapped = self.discover(runs)
        mapped.manifests.append(source_manifest(slug))
        used: dict[str, set[str]] = {t: set() for t in TABLES}
        for run in runs:
            try:
                mapped.manifests.extend(self._run(run, slug, policy.title, used))
            except DAMAGED as exc:
                mapped.counts["benchmark_runs"].skipped[str(damaged(exc))] += 1
            self.done_runs += 1
            if self.progress and self.done_runs % 250 == 0:
                self.progress(self.done_runs, total)
        for table in TABLES:
            counts = mapped.counts[table]
            counts.published = len(used[table])
            if table != "benchmark_runs" and counts.discovered > counts.published:
                counts.skipped["every run using it was skipped"] = counts.discovered - counts.published
        mapped.counts["benchmark_runs"].failed_evidence = sum(
            1 for r in runs if r["id"] in used["benchmark_runs"] and r["status"] != "passed")
        return mapped

    def _one_operation(self, impl_row: dict, op_id: str) -> None:
        """A run's implementation and workload must belong to one operation; otherwise the run would be
        filed under one operation while measuring another's workload (FlashInfer-Bench's
        torch_matmul_254647, written for gemm_n4096_k14336, ran on gemm_n4096_k4096 workloads)."""
        written_for = impl_row.get("operationId")
        if written_for and written_for != op_id:
            def name(op: str) -> str:
                return str(self.operations.get(op, {}).get("slug") or op)
            raise RowSkipped(
                f"cross-operation mismatch: implementation {impl_row.get('title') or impl_row.get('slug')!s} is "
                f"written for operation {name(written_for)} but the run measured a workload of {name(op_id)}; "
                "refused, since the run cannot be filed under either operation")

    def _run(self, run: dict, slug: str, title: str, used: dict[str, set[str]]) -> list[Manifest]:
        workload_row = self.workloads[run["workloadId"]]
        op_id = workload_row["operationId"]
        self._one_operation(self.implementations[run["implementationId"]], op_id)
        operation = self.memo.get(("op", op_id), lambda: map_operation(
            self.operations[op_id], self.aliases.get(op_id, []), title))
        kind = workload_row["manifest"]["kind"]
        make = map_suite if kind == "WorkloadSuite" else map_workload
        workload = self.memo.get(("wl", run["workloadId"]), lambda: make(workload_row, operation))
        impl_row = self.implementations[run["implementationId"]]
        project: Manifest
        if library_call(impl_row):  # FlashInfer's own API: the FlashInfer project, the runner's
            project = registry.project_manifest(FLASHINFER_PROJECT)
        else:
            project = self.memo.get(("project", impl_row["projectId"]), lambda: map_project(
                self.projects[impl_row["projectId"]]))
        implementation = self.memo.get(("impl", run["implementationId"]), lambda: map_implementation(
            impl_row, operation, project, self.artifacts, title))
        protocol_manifest = run["manifest"].get("protocol")
        statistic = (((protocol_manifest or {}).get("spec") or {}).get("measurement") or {}).get(
            "primaryStatistic") or run.get("primaryStatistic") or "unspecified"
        protocol = self.memo.get(("protocol", run["protocolKey"], statistic), lambda: map_protocol(
            protocol_manifest, statistic, title))
        environment = self.memo.get(("env", run["environmentKey"], run["hardwareModel"]), lambda: map_environment(
            run["manifest"].get("environment"), run["hardwareModel"]))
        refs = {"implementation": implementation, "workload": workload, "protocol": protocol,
                "environment": environment}
        manifest = map_run(run, refs, self.measurements.get(run["id"], []), slug)
        used["benchmark_runs"].add(run["id"])
        used["measurements"].update(m["id"] for m in self.measurements.get(run["id"], []))
        used["operations"].add(op_id)
        used["workloads"].add(run["workloadId"])
        used["implementations"].add(run["implementationId"])
        used["projects"].add(impl_row["projectId"])
        digest = ((impl_row.get("manifest") or {}).get("spec", {}).get("source") or {}).get("contentDigest")
        if isinstance(digest, str) and digest in self.artifacts:
            used["artifacts"].add(digest)
        return [operation, project, implementation, workload, protocol, environment, manifest]
