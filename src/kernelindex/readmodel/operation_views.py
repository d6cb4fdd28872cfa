"""The operation page's view models: what its HTML, its JSON twin and the CLI show, field by field."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kernelindex.readmodel.gaps import NotMeasured
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.leaderboard import Leaderboard
from kernelindex.readmodel.memory import MemoryPanel
from kernelindex.readmodel.paging import Paging
from kernelindex.readmodel.scaling import ScalingChart
from kernelindex.readmodel.shapes import ShapeTable


@dataclass
class ImplementationRef(JsonModel):
    slug: str
    title: str
    project: str
    language: str
    role: str
    version: str | None
    license: str | None
    usable: bool
    install_command: str | None
    not_usable_reasons: list[dict]
    source_url: str | None
    in_place: bool
    availability: str = "usable today"  # policy.usability: "usable today" / "version not recorded" / "not usable as-is"


@dataclass
class RankedRow(JsonModel):
    rank: int
    rank_label: str
    tied: bool
    within_noise: bool
    run_id: str
    digest: str
    implementation: ImplementationRef
    median_ns: int
    p20_ns: int | None
    p80_ns: int | None
    vs_first: float | None
    evidence: str
    observed_at: datetime
    stale: bool
    time_zone_recorded: bool
    is_baseline: bool
    faster_than_baseline: float | None
    rationale: list[str]
    floor_ratio: float | None = None  # "N× above floor" (floor-v1, datasheet; an estimate)
    throughput: float | None = None  # achieved GB/s (bandwidth-bound) or TFLOP/s (compute-bound)
    throughput_unit: str | None = None
    peak_share: float | None = None  # throughput ÷ the datasheet peak of the physical floor's bound (0.79 = 79%)
    method: str | None = None  # how the run was timed (runner runs: cuda_graph_replay / per_call_events)
    method_note: str | None = None  # said when it differs from the cohort's usual method
    replication: dict | None = None  # the runners that measured it too, agreeing or disagreeing
    source: str = ""  # the source's name (its license and attribution: the page's sources)
    runner: str | None = None  # the KernelIndex runner that measured it (None: its source reported it)
    region_note: str | None = None  # "this forward also computes the gradient; compare forward+backward"
    host_bound: str | None = None  # "host-bound on this host: W µs per call wall time, S syncs per call; …"
    reproduction: dict | None = None  # a reported run heard against our verified twins (readmodel.court)
    # What the figure is, from the cohort's protocol (policy.statistics): "median", "median device time", "mean"…
    statistic: str = "median"
    # The row's figure, whatever its statistic; ``median_ns`` is its deprecated alias (kept for one release)
    time_ns: int | None = None

    def __post_init__(self) -> None:
        if self.time_ns is None:
            self.time_ns = self.median_ns


@dataclass
class RankingNote(JsonModel):
    """What to read before a ranking's ratios (readmodel.ranking_notes)."""

    code: str  # FORWARD_COMPUTES_GRADIENT
    sentence: str
    url: str | None = None  # where the fair comparison is, when the catalog has it


@dataclass
class HeadlineSlot(JsonModel):
    kind: str  # fastest_usable | best_usable | fastest_not_usable | fastest_verified
    title: str
    row: RankedRow
    vs_fastest: float | None
    faster_than_baseline: float | None
    evidence_sentence: str
    cohort: str
    cohort_label: str
    floor_ratio: float | None = None


@dataclass
class OtherGpu(JsonModel):
    """Another GPU the selected workload was measured on: one click away from the headline (``?gpu=``)."""

    gpu: str  # its short label ("A100")
    slug: str
    evidence: str  # the strongest evidence among its eligible runs of the workload
    url: str


@dataclass
class CohortOption(JsonModel):
    """One cohort in the operation page's chooser (the records pages summarise cohorts as CohortSummary)."""

    key: str
    label: str
    gpu: str
    mode: str
    native: bool
    best_ns: int | None
    best_implementation: str | None
    best_run_id: str | None
    eligible_runs: int
    evidence: str | None
    selected: bool
    distinct: str | None = None  # what tells it from a cohort of the same GPU and region ("runner …")


@dataclass
class WorkloadSummary(JsonModel):
    key: str
    digest: str
    label: str
    axes: dict[str, int]
    dtypes: dict[str, str]
    params: dict[str, Any]
    eligible_runs: int
    selected: bool
    cohort: str | None = None  # the selected cohort's GPU and protocol on this workload, when measured there


@dataclass
class FloorView(JsonModel):
    """The two floors, named: the physical floor (datasheet peaks, never beaten by a correct run) and
    the attainable floor (the best bandwidth seen sustained on the GPU; None where none was)."""

    physical: dict
    attainable: dict | None
    record_ratio: float | None  # the record's median ÷ the physical floor
    attainable_record_ratio: float | None
    explanation: str


@dataclass
class LanguageLeader(JsonModel):
    language: str
    implementation: str
    median_ns: int
    rank_label: str
    vs_first: float | None
    run_id: str


@dataclass
class ImplementationSummary(JsonModel):
    implementation: ImplementationRef
    workloads_measured: int
    best_ns_in_cohort: int | None
    vs_leader: float | None
    best_run_id: str | None
    evidence: str | None


@dataclass
class SourceSummary(JsonModel):
    name: str
    runs: int
    last_observed: datetime
    title: str | None = None
    url: str | None = None
    license: str | None = None
    attribution: str | None = None
    license_name: str | None = None
    license_url: str | None = None


NEVER_RANKED = ("Another operation: the same computation on the same sizes in other dtypes. Its runs are shown "
                "for reference, each cohort with its own floor, and are never ranked with this page's runs.")


@dataclass
class OtherDtypeCohort(JsonModel):
    gpu: str
    mode: str
    statistic: str  # what this cohort ranks by, in words
    protocol: str  # how the source measured it ("aiter tuner · forward")
    best_ns: int | None
    best_implementation: str | None
    best_run_id: str | None
    evidence: str | None
    eligible_runs: int
    floor: dict | None  # that cohort's physical floor (its own dtypes on its own GPU), as the page's floor
    url: str


@dataclass
class OtherDtypeSection(JsonModel):
    operation: str
    title: str
    url: str
    dtypes: str  # "fp16 here, bf16 there"
    dtypes_here: dict[str, str]
    dtypes_there: dict[str, str]
    why: str  # the reviewed relation's words
    note: str = NEVER_RANKED
    workload: str | None = None  # the counterpart's workload with this workload's sizes
    workload_label: str | None = None
    workload_url: str | None = None
    cohorts: list[OtherDtypeCohort] = field(default_factory=list)


@dataclass
class OperationPage(JsonModel):
    slug: str
    title: str
    description: str
    digest: str
    digest_short: str
    family: str
    eligible_runs: int
    semantics: dict
    workloads: list[WorkloadSummary]
    selected_workload: str | None
    cohorts: list[CohortOption]
    selected_cohort: str | None
    cohort_line: dict | None
    headline: list[HeadlineSlot]
    fastest_by_language: list[LanguageLeader]
    coverage_gaps: list[str]
    coverage_asks: list[dict[str, str]]
    floor: FloorView | None
    ranked: list[RankedRow]
    not_ranked: list[dict]
    scaling: ScalingChart | None
    implementations: list[ImplementationSummary]
    sources: list[SourceSummary]
    shapes: ShapeTable | None = None
    not_measured: list[NotMeasured] = field(default_factory=list)
    asked_gpu: NotMeasured | None = None  # ?gpu= names a GPU without runs of this workload: said first
    json_url: str = ""
    memory: MemoryPanel | None = None  # peak memory beside the ranking, where the source measured it
    leaderboards: list[Leaderboard] = field(default_factory=list)  # suite-scoped source-native scores
    ranking_notes: list[RankingNote] = field(default_factory=list)  # read before the ranking's ratios
    # Reviewed counterparts in other dtypes (readmodel.other_dtype): shown beside, never ranked with these runs
    other_dtype: list[OtherDtypeSection] = field(default_factory=list)
    # The workload's other measured GPUs, linked from the headline (the reference pages' A100 view: ?gpu=a100)
    other_gpus: list[OtherGpu] = field(default_factory=list)
    generated_for: datetime = field(kw_only=True)  # the clock's "now" the page was built for (no default)
    # Where ``workloads`` lies in the whole list: a page of it (?page=) when it is long (readmodel.folding)
    workloads_paging: Paging | None = None


@dataclass
class OperationSummary(JsonModel):
    slug: str
    title: str
    family: str
    description: str
    aliases: list[str]
    eligible_runs: int
    workloads: int
    implementations: int
    digest: str
