"""The runner's measurement fields of a run and its environment (protocol v3's self-checks, v4's stream time and
ceilings): the parts of ``specs`` only the KernelIndex runner writes."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from kernelindex.domain.spec_types import DurationNs, MeasuredNs, Strict


class CeilingPoint(Strict):
    """Runner v4: one bandwidth ceiling kernel at one buffer size, timed as runs are (stream time: K calls over
    rotating buffers in one CUDA graph), in bytes read + written per second."""

    kernel: Literal["copy", "read", "write"]
    bytes: Annotated[int, Field(gt=0)]  # what one call streams, read + written
    bandwidth_bytes_per_s: Annotated[float, Field(gt=0)]


class CrossCheck(Strict):
    """Runner v3's self-check: the call timed by graph replay (or, where capture fails, per-call events)
    beside its device time. ``agrees`` is required (True/False) for capturable calls of at least 20 µs
    device time: within 5%; None where no agreement is required. A False flags the run."""

    method: Literal["cuda_graph_replay", "per_call_events"]
    median_ns: MeasuredNs
    agrees: bool | None = None
    detail: str | None = None


class HostCost(Strict):
    """Runner v3: per call, the wall time (back-to-back calls, no flush, over the count), the host CPU
    time of the process over the same calls, and the host synchronisations the trace shows inside one
    call. ``bound``: wall time over device time × 1.2 (policy.device_time decides it)."""

    wall_ns: MeasuredNs
    cpu_ns: DurationNs | None = None
    syncs_per_call: Annotated[float, Field(ge=0)]
    device_to_host_copies_per_call: Annotated[float, Field(ge=0)] = 0.0
    bound: bool


class StreamReplay(Strict):
    """Runner v4: how the stream time was taken (docs: runner.md, "Stream time"). ``calls_per_replay`` (K) calls
    back to back over ``rotation_sets`` (R) input/output sets, one replay timed whole, per call = replay / K.
    ``capture``: ``cuda_graph`` (one CUDA graph of the K calls, no host in it) or ``eager`` (the call cannot be
    captured: it synchronises with the host, so its stalls on this host are in the figure, and it says so)."""

    capture: Literal["cuda_graph", "eager"]
    calls_per_replay: Annotated[int, Field(ge=1)]
    rotation_sets: Annotated[int, Field(ge=1)]
    footprint_bytes: Annotated[int, Field(ge=0)]  # one call's own tensors: inputs and what it returns
    l2_bytes: Annotated[int, Field(ge=0)] | None = None  # the GPU's L2, which R sets together exceed 4×
    capture_failure: str | None = None  # why the call was timed eagerly
    # A problem module's parameters and buffers: one model, called as a layer is, so not rotated (its bytes)
    unrotated_bytes: Annotated[int, Field(ge=0)] | None = None


class KernelBusy(Strict):
    """Runner v4's secondary figure: protocol v3's device time — the union of the call's kernel, copy and set
    intervals after an L2 flush (CUPTI). It leaves out write-back after the last kernel and the gaps between
    kernels, so it is recorded, never ranked against stream time."""

    median_ns: MeasuredNs
    samples: Annotated[int, Field(ge=1)]
    span_median_ns: DurationNs | None = None  # first start to last end of the call's GPU activity
