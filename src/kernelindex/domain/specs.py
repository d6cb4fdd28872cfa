"""Spec bodies of the manifests: the identity of every catalog object (DESIGN §2), strict pydantic
models that refuse unknown fields, wrong types, NaN, ambiguous durations and malformed digests."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
)
from pydantic_core import PydanticCustomError

from kernelindex.domain.instants import manifest_instant
from kernelindex.domain.units import DurationError, parse_duration_ns

API_VERSION = "kernelindex/v1"

Digest = Annotated[str, StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$")]
Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=120)]


def _duration(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a duration is an integer number of nanoseconds or a string like '58880ns'")
    if isinstance(value, str):
        try:
            return parse_duration_ns(value)
        except DurationError as exc:
            raise ValueError(str(exc)) from exc
    if isinstance(value, float):
        raise ValueError("a duration given as a bare float is ambiguous; write integer nanoseconds or '<n><unit>'")
    return value


def _measured(value: int) -> int:
    if value < 1:
        raise PydanticCustomError("measured_time", "a measured time must be at least 1 ns, got {value} ns",
                                  {"value": value})
    return value


DurationNs = Annotated[int, BeforeValidator(_duration), Field(ge=0)]
# Medians and quantiles are divisors in every ratio: zero or sub-nanosecond values are refused.
MeasuredNs = Annotated[int, BeforeValidator(_duration), AfterValidator(_measured)]


Instant = Annotated[datetime, AfterValidator(manifest_instant)]


def _sort_key(value: Any) -> str:
    plain = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    return json.dumps(plain, sort_keys=True)


def _sorted_unique(values: list[Any]) -> list[Any]:
    if len(values) < 2:  # most sets are empty or one element: nothing to sort (the read model validates thousands)
        return values
    unique = {_sort_key(v): v for v in values}
    return [unique[k] for k in sorted(unique)]


SetList = AfterValidator(_sorted_unique)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


class Metadata(Strict):
    name: Slug | None = None
    title: str | None = None
    description: str | None = None
    aliases: Annotated[list[str], SetList] = Field(default_factory=list)
    labels: dict[str, str] = Field(default_factory=dict)
    links: dict[str, str] = Field(default_factory=dict)


# --- OperationSpec -------------------------------------------------------------------------------


class Axis(Strict):
    role: Literal["variable", "constant", "derived"]
    expression: str | None = None  # derived axes: e.g. "hidden // q_heads"
    description: str | None = None


class TensorDecl(Strict):
    name: str
    dtype: str  # a concrete dtype ("int64") or a dtype variable declared in dtype_variables
    shape: list[str | int]  # symbolic: axis names, integers, or expressions of axes
    layout: Literal["contiguous", "any"] = "contiguous"
    # Gather-like inputs: only rows that can be touched cost traffic (floor-v1).
    gather_rows: str | None = None  # expression bounding touched rows, e.g. "min(vocab, batch*seq)"
    role: str | None = None  # e.g. "table", "ids", "constant"


class Alias(Strict):
    output: str
    input: str


class OperationSpecBody(Strict):
    family: str
    semantics: str
    axes: dict[str, Axis]
    dtype_variables: dict[str, Annotated[list[str], SetList]] = Field(default_factory=dict)
    inputs: list[TensorDecl]
    outputs: list[TensorDecl]
    may_alias: Annotated[list[Alias], SetList] = Field(default_factory=list)
    determinism: Literal["deterministic", "nondeterministic", "unspecified"] = "unspecified"
    reference: str  # pointer to the reference semantics used for correctness
    tolerance: dict[str, float] = Field(default_factory=dict)  # dtype → max relative error
    flops: str | None = None  # expression; absent = bandwidth-only family
    constraints: Annotated[list[str], SetList] = Field(default_factory=list)


# --- WorkloadCase --------------------------------------------------------------------------------


class ConcreteTensor(Strict):
    name: str
    dtype: str
    shape: list[int]
    strides: list[int]


class SuiteCase(Strict):
    axes: dict[str, int | float | str | bool]
    external_id: str | None = None


class SuiteAggregation(Strict):
    metric: str
    statistic: str


class WorkloadSuiteBody(Strict):
    """A source's benchmark suite: several cases scored together (a leaderboard problem). Runs on a
    suite are suite-scoped: they belong to the problem, never to one workload's ranking."""

    operation: Digest
    cases: list[SuiteCase]
    aggregation: SuiteAggregation


class WorkloadCaseBody(Strict):
    operation: Digest
    axes: dict[str, int]
    dtypes: dict[str, str]
    tensors: list[ConcreteTensor]
    # Non-shape parameters that change what is computed (eps, window size, loss weights ...).
    params: dict[str, int | float | str | bool] = Field(default_factory=dict)


# --- SoftwareProject / ImplementationRevision ---------------------------------------------------


class SoftwareProjectBody(Strict):
    name: str
    kind: Literal["library", "vendor", "individual"]
    repository: str | None = None
    homepage: str | None = None
    packages: Annotated[list[str], SetList] = Field(default_factory=list)


class Callable(Strict):
    language: Literal["triton", "cuda", "python", "cute", "cute-dsl", "cutile", "cpp", "other"]
    module: str
    symbol: str


class PackagePin(Strict):
    name: str
    version: str | None = None  # None = the source did not record it


class InstallRecipe(Strict):
    method: Literal["pip", "git", "source", "none"]
    packages: list[PackagePin] = Field(default_factory=list)
    git_url: str | None = None
    git_commit: str | None = None
    why_missing: str | None = None  # sentence when a version is unknown


class License(Strict):
    declared: str | None = None
    concluded: str | None = None  # SPDX expression, only from a trusted place
    concluded_from: str | None = None  # where the conclusion comes from


class ArtifactRef(Strict):
    kind: str  # e.g. "source"
    digest: Digest
    size_bytes: int | None = None
    media_type: str | None = None
    license: str | None = None  # as the source records it for this file
    url: str | None = None
    held_by: str  # who holds the file, in words (e.g. "FlashInfer-Bench")


class ImplementationRevisionBody(Strict):
    project: Digest
    operation: Digest
    version: str | None = None
    commit: str | None = None
    callable: Callable
    role: Literal["baseline", "candidate"] = "candidate"
    in_place: bool = False
    archs: Annotated[list[str], SetList] = Field(default_factory=list)
    dtypes: Annotated[list[str], SetList] = Field(default_factory=list)
    install: InstallRecipe
    license: License
    source_url: str | None = None  # public source for this exact version, when known
    artifacts: list[ArtifactRef] | None = None  # mirrored files (digest, size, license), when a source has them


# --- BenchmarkProtocol / ExecutionEnvironment ----------------------------------------------------


class Harness(Strict):
    name: str
    version: str | None = None


class Budget(Strict):
    count: int | None = None
    time_ns: DurationNs | None = None


class CorrectnessPolicy(Strict):
    policy: Literal["asserted", "not_asserted"]
    comparator: str | None = None
    tolerances: dict[str, float] = Field(default_factory=dict)


class BenchmarkProtocolBody(Strict):
    harness: Harness
    timer: str
    # forward-no-grad: the forward call under torch.no_grad() (no autograd graph recorded), which a
    # fused loss may run without the gradient work it does in "forward": another region, never merged.
    timed_region: Literal["forward", "backward", "forward+backward", "forward-no-grad"]
    setup_excluded: bool = True
    warmup: Budget
    repetitions: Budget
    l2_policy: str
    input_regeneration: str
    statistic: Literal["median", "mean", "geomean", "unspecified"] = "median"
    quantiles: Annotated[list[float], SetList] = Field(default_factory=list)
    correctness: CorrectnessPolicy
    native: bool = True  # a source's own harness (source-native cohort) vs the KernelIndex runner


class Hardware(Strict):
    vendor: str
    product: str
    architecture: str | None = None
    memory_bytes: int | None = None
    form_factor: str | None = None


class ExecutionEnvironmentBody(Strict):
    hardware: Hardware
    software: dict[str, str] = Field(default_factory=dict)
    copy_bandwidth_bytes_per_s: float | None = None  # measured ceiling, when a runner measured it
    read_bandwidth_bytes_per_s: float | None = None  # read-only stream, measured by a runner
    write_bandwidth_bytes_per_s: float | None = None  # write-only stream, measured by a runner
    clocks: dict[str, str] = Field(default_factory=dict)


# --- BenchmarkRun --------------------------------------------------------------------------------

RunStatus = Literal[
    "passed", "incorrect_numerical", "runtime_error", "compile_error", "timeout", "suspected_reward_hack", "skipped"
]


class Timing(Strict):
    median_ns: MeasuredNs | None = None
    p20_ns: MeasuredNs | None = None
    p80_ns: MeasuredNs | None = None
    mad_ns: DurationNs | None = None
    mean_ns: DurationNs | None = None  # sources that report a mean (never ranked with medians)
    std_ns: DurationNs | None = None
    min_ns: DurationNs | None = None
    max_ns: DurationNs | None = None
    samples: int | None = None
    samples_digest: Digest | None = None
    raw: dict[str, str] = Field(default_factory=dict)  # source values verbatim, e.g. {"median_ms": "0.0588"}
    ci95_low_ns: DurationNs | None = None
    ci95_high_ns: DurationNs | None = None
    host_ns: DurationNs | None = None  # host time per call, recorded separately
    secondary: dict[str, DurationNs] = Field(default_factory=dict)  # e.g. {"do_bench_median_ns": ...}
    method: str | None = None  # e.g. "cuda_graph_replay" or "per_call_events"


class MemoryFigure(Strict):
    """A second metric: the peak memory a source measured, in MiB. Never a latency, never ranked
    against one; absent on latency runs (so their identity is unchanged)."""

    metric: Literal["peak_memory"]
    unit: Literal["MiB"]
    median: Annotated[float, Field(ge=0)]
    p20: Annotated[float, Field(ge=0)] | None = None
    p80: Annotated[float, Field(ge=0)] | None = None
    scope: str  # what was measured, in words


class ScoreFigure(Strict):
    """A leaderboard's own score over a suite (seconds): source-native, suite-scoped, ranked only
    against other scores of the same suite, GPU and statistic."""

    metric: Literal["score"]
    statistic: Literal["geomean", "unspecified"]
    unit: Literal["s"]
    value: Annotated[float, Field(ge=0)]
    scope: str


class CorrectnessResult(Strict):
    checked: bool
    passed: bool | None = None
    relative_error: float | None = None
    tolerance: float | None = None
    mutated_inputs: Annotated[list[str], SetList] = Field(default_factory=list)
    detail: str | None = None


class RunSource(Strict):
    name: str
    external_id: str
    snapshot: Digest | None = None
    time_zone_recorded: bool = True


class RunnerIdentity(Strict):
    name: str
    key_id: Digest  # domain.canonical.key_id_of(public key hex)


class BenchmarkRunBody(Strict):
    implementation: Digest
    workload: Digest
    protocol: Digest
    environment: Digest
    status: RunStatus
    timing: Timing
    memory: MemoryFigure | None = None
    score: ScoreFigure | None = None
    correctness: CorrectnessResult
    observed_at: Instant
    source: RunSource
    runner: RunnerIdentity | None = None
    artifacts: dict[str, Digest] = Field(default_factory=dict)


# --- Lifecycle facts and sources -----------------------------------------------------------------


class RetractionBody(Strict):
    run: Digest
    reason: Annotated[str, StringConstraints(min_length=1)]
    actor: str
    at: Instant


class SupersessionBody(Strict):
    new: Digest
    old: Digest
    reason: Annotated[str, StringConstraints(min_length=1)]
    actor: str
    at: Instant


class TrustedRunnerBody(Strict):
    name: str
    public_key: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]  # raw Ed25519, hex
    trusted_by: str
    at: Instant


class SourceBody(Strict):
    name: str
    url: str
    license: str
    attribution: str
    notice: str | None = None
