"""Response schemas of the resolver endpoints, for the OpenAPI document (and so for Schemathesis,
which checks every response against them). They describe ``Resolution.to_json()`` exactly."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReasonOut(_Doc):
    code: str
    sentence: str


class ImplementationOut(_Doc):
    slug: str
    title: str
    project: str | None
    language: str
    license: str | None
    usable: bool
    baseline: bool
    install_command: str | None
    not_usable_reasons: list[ReasonOut]
    url: str
    availability: str = Field("", description="In words, as the operation page's row says it: 'usable today', "
                              "'version not recorded', 'flagged by its source' or 'not usable as-is'.")


class RowOut(_Doc):
    run_id: str
    rank: int
    rank_label: str
    within_noise: bool
    implementation: ImplementationOut
    time_ns: int | None = Field(description="The row's figure: the median of its implementation's replicates in the "
                                            "cohort, of the cohort's statistic (the figure vs_first divides).")
    time: str = Field(description="time_ns, written for people.")
    median_ns: int | None = Field(description="Deprecated alias of time_ns, kept for one release.",
                                  json_schema_extra={"deprecated": True})
    median: str = Field(description="Deprecated alias of time, kept for one release.",
                        json_schema_extra={"deprecated": True})
    p20_ns: int | None
    p80_ns: int | None
    vs_first: float | None
    evidence: str
    source: str
    runner: str | None = Field(description="The KernelIndex runner that measured the run; null when its source "
                                           "reported it.")
    observed_at: str
    stale: bool
    region_note: str | None = Field(description="The operation page's note when the run's timed region does "
                                                "another region's work (e.g. this backward only scales the "
                                                "gradient its forward computed; compare forward+backward); null "
                                                "when it does only its own.")
    host_bound: str | None = Field(None, description="The runner's host-bound label, as the operation page shows "
                                                     "it: the call's wall time and host syncs beside its device "
                                                     "time (the figure); null when device-bound or not measured.")
    url: str


class HiddenOut(_Doc):
    run_id: str
    implementation: str
    code: str
    sentence: str


class MismatchOut(_Doc):
    field: str
    requested: str | int
    observed: str | int | None


class WorkloadOut(_Doc):
    key: str
    ref: str
    axes: dict[str, int]
    dtypes: dict[str, str]


class GpuOut(_Doc):
    slug: str | None
    label: str
    arch: str | None


class CohortOut(_Doc):
    cohort_key: str
    label: str
    workload: WorkloadOut
    gpu: GpuOut
    mode: str
    protocol: str
    runner: str | None = Field(description="The KernelIndex runner that measured the cohort; null when its source "
                                           "reported it. Where two listed cohorts would read alike, the label ends "
                                           "with what tells them apart (\"runner NAME\").")
    ranking: str
    eligible_runs: int
    ranked_statistic: str = Field(description="What the cohort's ranking orders by, in a few words: 'median device "
                                              "time' (our runner), 'mean, as its source timed it' (a source's own "
                                              "harness) — cohorts side by side may time different things")
    leader: RowOut | None
    hidden_by_filters: list[HiddenOut]
    not_ranked: list[HiddenOut]
    mismatches: list[MismatchOut]
    query: str
    url: str
    rows: list[RowOut] | None = None


class NeighbourOut(_Doc):
    value: int
    query: str
    leaders: list[CohortOut]


class NearestOut(_Doc):
    axis: str
    requested: int
    message: str
    note: str
    below: NeighbourOut | None
    above: NeighbourOut | None


class CompatibleOut(_Doc):
    total: int
    shown: list[CohortOut]


class GapOut(_Doc):
    gpu: str
    gpu_label: str
    scope: str
    message: str
    url: str
    ask_url: str | None = Field(None, description="The site's \"Ask for this measurement\" form for this gap, when it "
                                "is one exact workload on one GPU.")
    page_url: str | None = Field(None, description="The operation page asked for this GPU (`?gpu=`): it says the GPU "
                                 "is not measured, its floor estimate and the nearest measured GPU.")


class ChoiceOut(_Doc):
    slug: str
    title: str
    family: str
    eligible_runs: int
    on_gpu_runs: int | None = Field(None, description="Runs on the GPU the query names: eligible workload runs and "
                                    "leaderboard scores (null: no GPU named)")
    on_gpu_scores: int | None = Field(None, description="Of on_gpu_runs, the suite-scoped leaderboard score runs (they "
                                      "rank a problem's whole suite, in no workload's cohort; null: no GPU named)")
    evidence_text: str = Field(description="The counts in words, as pages and the CLI show them: '56 runs (9 on the "
                                           "GPU asked for)'")
    constants: dict[str, int] = Field(default_factory=dict, description="Axes the operation fixes (role constant)")
    query: str
    url: str


class TokenOut(_Doc):
    text: str
    start: int
    end: int
    kind: str
    value: str | int | bool | None


class IssueOut(_Doc):
    token: str
    start: int
    end: int
    code: str
    message: str
    suggestion: str | None


class ParsedOut(_Doc):
    text: str
    tokens: list[TokenOut]
    issues: list[IssueOut]
    operation_match: str | None
    operation_candidates: list[str]
    suggested_operations: list[str] = Field(
        description="When no word names an operation but one is a close spelling of some: those operations, "
                    "closest first (offered as the choices, never picked).")


class OperationRef(_Doc):
    slug: str
    title: str
    family: str | None
    url: str


class ResolutionOut(_Doc):
    """Exact cohorts (ranked inside each), other protocols, compatible cohorts with their mismatches,
    the nearest measured cases of an unmeasured shape, coverage gaps, or a chooser of operations."""

    query: ParsedOut | None
    status: str = Field(description="exact, other_protocols, not_measured, no_exact_evidence, choose_operation, "
                        "no_operation, no_runs, leaderboard_only — or partial when terms of the text query were "
                        "ignored")
    answer_status: str = Field(description="What the understood part of the query found (equals status unless "
                               "status is partial)")
    message: str
    request: dict[str, Any]
    interpretation: str
    canonical_query: str
    operation: OperationRef | None
    exact: list[CohortOut]
    exact_total: int
    other_protocols: list[CohortOut]
    other_protocols_total: int
    compatible: CompatibleOut
    nearest: NearestOut | None
    gaps: list[GapOut]
    choices: list[ChoiceOut]
    notes: list[ReasonOut]
    catalog_version: int | None = None
