"""What the read model holds of one operation: its runs and the manifests they name, typed, with
the policy facts derived once at load (``readmodel.loading`` builds them), and what is derived from
them on first use (its cohorts ranked, their summaries per day) kept on the object itself: the first
cache level (docs/caching.md). The object knows nothing of the catalog it came from; the attainable
bandwidths of its GPUs, which move with other operations' verified runs, are attached to a shallow
copy by ``readmodel.loading`` and are the only thing in it that does not come from its own rows."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypedDict, TypeVar

from kernelindex import registry
from kernelindex.domain.gpus import GpuSpec
from kernelindex.domain.manifests import (
    BenchmarkProtocol,
    ExecutionEnvironment,
    ImplementationRevision,
    OperationSpec,
    SoftwareProject,
    Source,
    WorkloadCase,
    WorkloadSuite,
    manifest_json,
)
from kernelindex.domain.specs import BenchmarkRunBody, MemoryFigure, ScoreFigure
from kernelindex.domain.titles import operation_title
from kernelindex.policy.ceilings import CeilingCheck
from kernelindex.policy.cohorts import metric_of
from kernelindex.policy.eligibility import Eligibility
from kernelindex.policy.floor import Attainable
from kernelindex.policy.reproduction import Reproduction
from kernelindex.policy.usability import Usability
from kernelindex.readmodel.replication import Replication

T = TypeVar("T")


class RetractionFact(TypedDict):
    """A row of the retractions table (catalog.models.RetractionRow), as the dossier shows it."""

    digest: str
    run: str
    reason: str
    actor: str
    at: datetime


class SupersessionFact(TypedDict):
    """A row of the supersessions table (catalog.models.SupersessionRow)."""

    digest: str
    new: str
    old: str
    reason: str
    actor: str
    at: datetime


@dataclass(slots=True)  # ~11,000 of them stay loaded: slots save memory and attribute lookups
class Run:
    digest: str
    run_id: str
    spec: BenchmarkRunBody
    cohort_key: str
    implementation: str
    workload: str
    protocol: str
    environment: str
    status: str
    median_ns: int | None
    p20_ns: int | None
    p80_ns: int | None
    observed_at: datetime
    source: str
    retracted: RetractionFact | None = None
    superseded_by: SupersessionFact | None = None
    supersedes: list[str] = field(default_factory=list)
    attested: bool = False
    evidence: str = "reported"
    eligibility: Eligibility | None = None
    # runner v4: compulsory bytes over the stream time against the ceiling measured for its mix and size
    ceiling_check: CeilingCheck | None = None
    replication: Replication | None = None  # other trusted runners' verified runs of the same thing
    invalid_stored: tuple[str, ...] = ()  # stored values that cannot be used, named (readmodel.stored_runs)
    reproduction: Reproduction | None = None  # a reported run heard against our verified twins (readmodel.court)
    reproduces: list[str] = field(default_factory=list)  # a verified run: the reported runs it was heard against

    @property
    def eligible(self) -> bool:
        return bool(self.eligibility and self.eligibility.eligible)

    @property
    def runner(self) -> str | None:
        """The name of the KernelIndex runner that measured it (None: a source reported it)."""
        return self.spec.runner.name if self.spec.runner else None

    @property
    def ranked_median_ns(self) -> int:
        """The median of a run that is ranked or charted (eligibility requires one)."""
        if self.median_ns is None:
            raise ValueError(f"run {self.run_id} has no median and cannot be ranked")
        return self.median_ns

    @property
    def interval(self) -> tuple[int | None, int | None]:
        timing = self.spec.timing
        if timing.ci95_low_ns is not None:
            return timing.ci95_low_ns, timing.ci95_high_ns
        return self.p20_ns, self.p80_ns

    @property
    def metric(self) -> str:
        spec = self.spec
        return metric_of(spec.memory is not None, spec.score.statistic if spec.score else None,
                         spec.timing.median_ns, spec.timing.mean_ns)

    @property
    def score(self) -> ScoreFigure:
        """The leaderboard score of a score run (``OperationData.score_runs``)."""
        if self.spec.score is None:
            raise ValueError(f"run {self.run_id} is not a leaderboard score")
        return self.spec.score

    @property
    def memory(self) -> MemoryFigure:
        """The peak memory of a memory run (``OperationData.memory_runs``)."""
        if self.spec.memory is None:
            raise ValueError(f"run {self.run_id} has no peak-memory figure")
        return self.spec.memory


@dataclass
class OperationData:
    slug: str
    operation: OperationSpec
    digest: str
    runs: list[Run]
    workloads: dict[str, WorkloadCase]
    implementations: dict[str, ImplementationRevision]
    projects: dict[str, SoftwareProject]
    protocols: dict[str, BenchmarkProtocol]
    environments: dict[str, ExecutionEnvironment]
    usability: dict[str, Usability]  # per implementation digest
    trusted_keys: dict[str, str]  # key id → runner name
    version: int  # the operation's own version (``readmodel.versions``) it was loaded at
    sources: dict[str, Source] = field(default_factory=dict)  # Source manifests by source name
    # Runs of a second metric (peak memory): kept apart, so nothing that ranks or counts latency
    # (cohorts, eligibility counts, records, search) ever sees them.
    memory_runs: list[Run] = field(default_factory=list)
    # Suite-scoped leaderboard scores: ranked only among themselves, per suite, GPU and statistic.
    score_runs: list[Run] = field(default_factory=list)
    suites: dict[str, WorkloadSuite] = field(default_factory=dict)  # the suites the score runs name
    # Stored runs left out because their required parts cannot be read: why, by digest.
    unreadable: dict[str, str] = field(default_factory=dict)
    # The attainable bandwidth of each of its GPUs that has one (``readmodel.attainable``), attached by
    # ``readmodel.loading.load_operation``; the attainable floor divides by it.
    attainable: Mapping[str, Attainable] = field(default_factory=dict)
    # What was derived from the runs above on first use, by name. Shared by the copies that differ only
    # in ``attainable``, so nothing that depends on it is kept here.
    memo: dict[Hashable, Any] = field(default_factory=dict, repr=False, compare=False)

    def derived(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()``, once per loaded operation (two threads may both compute it; one result is kept)."""
        if key not in self.memo:
            self.memo.setdefault(key, compute())
        return self.memo[key]

    @property
    def gpu_slugs(self) -> frozenset[str]:
        """The GPUs of its environments (those the registry knows)."""
        def compute() -> frozenset[str]:
            return frozenset(gpu.slug for env in self.environments if (gpu := self.gpu_of(env)) is not None)
        return self.derived("gpu-slugs", compute)

    @property
    def title(self) -> str:
        """The operation's title, read as people read it (``domain.titles``), or its slug when it has none."""
        return operation_title(self.operation.metadata.title, self.slug)

    def specs_json(self, workload: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """The operation's and the workload's specs in the JSON form the pure policies (floor, snippets) take,
        dumped once per loaded operation (read-only: every floor and snippet of the workload shares them). The
        operation's ``flops`` is the floor's (``registry.floor_spec``: a registry rule for an imported one)."""
        operation = self.derived("operation-spec-json",
                                 lambda: registry.floor_spec(self.operation, manifest_json(self.operation)["spec"]))
        return operation, self.derived(("workload-spec-json", workload),
                                       lambda: manifest_json(self.workloads[workload])["spec"])

    def gpu_of(self, environment: str) -> GpuSpec | None:
        return registry.gpu_for_product(self.environments[environment].spec.hardware.product)
