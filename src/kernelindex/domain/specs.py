"""Spec bodies of the manifests: the identity of every catalog object (docs/design.md §2), strict pydantic
models that refuse unknown fields, wrong types, NaN, ambiguous durations and malformed digests."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from kernelindex.domain.runner_specs import (  # noqa: F401 - re-exported beside the specs that use them
    CeilingPoint,
    CrossCheck,
    HostCost,
    KernelBusy,
    StreamReplay,
)
from kernelindex.domain.spec_types import (  # noqa: F401 - re-exported: specs.Digest etc. are used elsewhere
    Digest,
    DurationNs,
    Instant,
    MeasuredNs,
    SetList,
    Slug,
    Strict,
)

API_VERSION = "kernelindex/v1"


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


def contiguous_strides(shape: list[int], order: list[int] | None = None) -> list[int]:
    """The strides of a dense tensor of ``shape`` whose dimensions are laid out in ``order``, outermost
    first (row-major when not given). An empty dimension steps as a dimension of one, as PyTorch's do."""
    strides, step = [0] * len(shape), 1
    for dim in reversed(order or range(len(shape))):
        strides[dim] = step
        step *= max(shape[dim], 1)
    return strides


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
    # The adapter's declaration that its forward also computes the gradients (Liger's fused losses):
    # its forward does the backward's work, so compare forward+backward. Absent (None) otherwise.
    forward_computes_gradient: bool | None = None
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
    # What the timed call also does beyond its region (Megatron's "full" rows accumulate gradients into
    # .grad across calls): a labelled variant, its own cohort, never ranked with the plain region.
    variant: str | None = None


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
    fp16_gemm_flops_per_s: float | None = None  # 8192³ fp16 torch.matmul (cuBLAS), measured by a runner
    # Per ceiling kernel (copy | read | write), the buffer size in bytes its recorded bandwidth was best at
    # (runner/cuda.ceiling_sweep); absent: a runner from before the sweep, which streamed 1 GiB only.
    ceiling_bytes: dict[str, int] | None = None
    # Runner v4: every ceiling kernel at every size (1 MiB to 4 GiB), for the ceiling of a run's read/write mix at
    # its size (policy/ceilings.mix_ceiling), and the shortest call the GPU runs in a stream (one tiny kernel's
    # stream time: the latency term of a floor). Absent on older environments.
    ceiling_table: list[CeilingPoint] | None = None
    min_call_ns: Annotated[float, Field(gt=0)] | None = None
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
    # e.g. "cuda_graph_replay" or "per_call_events" (runner v1/v2), "cupti-device-time" (runner v3, where
    # median/p20/p80/mad are the call's device time), "stream-time" (runner v4: what the call costs a stream;
    # docs/runner.md)
    method: str | None = None
    # Runner v3 (all absent on older runs, so their identity is unchanged):
    span_median_ns: DurationNs | None = None  # first start to last end of the call's GPU activity
    cross_check: CrossCheck | None = None  # the same call timed another way, never ranked
    host: HostCost | None = None  # what the call costs the host
    min_samples: int | None = None  # the protocol's minimum the run was held to
    under_sampled: str | None = None  # why the run has fewer than min_samples; absent when it has enough
    # Runner v4 (method "stream-time"; absent on older runs): the median is the stream time per call
    stream: StreamReplay | None = None
    kernel_busy: KernelBusy | None = None


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
