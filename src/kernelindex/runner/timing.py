"""The timing protocol, independent of any device.

A ``Device`` turns a zero-argument call into a ``Sampler`` (on CUDA: a captured graph that flushes
L2 and records events around each call) and measures host time. ``measure_interleaved`` warms
every sampler up, then takes samples round-robin across implementations (the order rotates every
round) until each has enough: at least ``min_samples``, then it stops when the relative standard
error is under target, at ``max_samples``, or when the case's time budget is spent. Tests drive it
with a fake device clock. ``between(where)``, where given, is called before every batch and before the host
cost: a campaign's step limit cuts there (runner/step_limit.py), so a cut waits for one batch at most.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from kernelindex.runner.stats import Summary, relative_standard_error, summarize
from kernelindex.runner.trace import CallActivity

Call = Callable[[], object]
SafePoint = Callable[[str], None]


def _nothing(where: str) -> None:
    return None


class Sampler(Protocol):
    method: str  # e.g. "cuda_graph_replay" or "per_call_events"

    def sample(self) -> list[float]:
        """Run a batch of timed calls; return the device time of each call in ns."""
        ...


class Device(Protocol):
    name: str

    def sampler(self, call: Call) -> Sampler: ...

    def host_times_ns(self, call: Call, calls: int) -> list[float]:
        """Host time of each call (launch cost), the device drained before each call."""
        ...

    def wall_ns(self) -> int: ...

    def synchronize(self) -> None: ...


@dataclass(frozen=True)
class TimingPolicy:
    warmup_calls: int = 10
    warmup_time_ns: int = 50_000_000
    min_samples: int = 100
    max_samples: int = 2_000
    target_rse: float = 0.005
    time_budget_ns: int = 4_000_000_000  # per case, all implementations together
    host_calls: int = 50
    # Before min_samples only this stops a case (0: 3x the budget). v3 campaigns set it high: CUPTI samples
    # are cheap, and a run short of the minimum does not rank.
    hard_limit_ns: int = 0


@dataclass
class Measurement:
    method: str
    samples: list[float] = field(default_factory=list)
    stop_reason: str = ""
    warmup_calls: int = 0
    host_samples: list[float] = field(default_factory=list)
    fallback_reason: str | None = None  # why graph capture failed, when the sampler fell back
    activities: list[CallActivity] = field(default_factory=list)  # v3: each sample's trace (span, syncs)

    def summary(self) -> Summary:
        return summarize(self.samples)


def sampler_with_fallback(
    call: Call, graph: Callable[[Call], Sampler], events: Callable[[Call], Sampler],
    on_failure: Callable[[], object] | None = None,
) -> Sampler:
    """The graph-replay sampler; where capture fails (a call that synchronizes, a backward whose
    autograd graph refuses capture, ...), the per-call-events sampler, carrying the reason in
    ``fallback_reason`` so the run says which method timed it and why."""
    try:
        return graph(call)
    except Exception as exc:  # noqa: BLE001 - any capture failure means: fall back, and say so
        if on_failure is not None:
            on_failure()
        sampler = events(call)
        # The Sampler protocol leaves the attribute out (a graph sampler never falls back); the events
        # sampler the fallback returns (cuda.EventSampler) declares it, and Measurement reads it there.
        sampler.fallback_reason = f"{type(exc).__name__}: {exc}"[:300]  # type: ignore[attr-defined]
        return sampler


def warm_up(call: Call, sampler: Sampler, device: Device, policy: TimingPolicy, between: SafePoint = _nothing,
            name: str = "") -> int:
    """Plain calls by count (compilation, autotuning), then sampler batches until the time is spent."""
    between(f"warm-up {name}")
    for _ in range(policy.warmup_calls):
        call()
    device.synchronize()
    start, batches = device.wall_ns(), 0
    while device.wall_ns() - start < policy.warmup_time_ns or batches == 0:
        between(f"warm-up {name}, batch {batches + 1}")
        sampler.sample()
        batches += 1
    return policy.warmup_calls + batches


def _finished(m: Measurement, policy: TimingPolicy, elapsed_ns: int) -> str:
    n = len(m.samples)
    if n >= policy.max_samples:
        return f"max_samples ({policy.max_samples})"
    hard_limit = policy.hard_limit_ns or 3 * policy.time_budget_ns
    hard_stop = f"hard time limit ({hard_limit / 1e9:g} s for the case)" if elapsed_ns >= hard_limit else ""
    if n < policy.min_samples:  # a run short of the minimum stops only at the hard limit
        return f"{hard_stop} before min_samples" if hard_stop else ""
    if relative_standard_error(m.samples) <= policy.target_rse:
        return f"relative standard error <= {policy.target_rse:.2%}"
    return "time budget" if elapsed_ns >= policy.time_budget_ns else hard_stop


def measure_interleaved(
    calls: dict[str, Call],
    samplers: dict[str, Sampler],
    device: Device,
    policy: TimingPolicy,
    on_round: Callable[[dict[str, Measurement]], None] | None = None,
    between: SafePoint = _nothing,
) -> dict[str, Measurement]:
    """Time several implementations of one workload, interleaved round by round."""
    results = {name: Measurement(method=samplers[name].method, fallback_reason=getattr(samplers[name],
                                 "fallback_reason", None)) for name in samplers}
    for name, sampler in samplers.items():
        results[name].warmup_calls = warm_up(calls[name], sampler, device, policy, between, name)
        traced = getattr(sampler, "activities", None)
        if traced is not None:
            traced.clear()  # the warm-up's traces are not samples
    start, round_index = device.wall_ns(), 0
    pending = list(samplers)
    while pending:
        order = pending[round_index % len(pending):] + pending[: round_index % len(pending)]
        for name in order:
            between(f"sampling round {round_index + 1} {name}")
            results[name].samples.extend(samplers[name].sample())
        for name in list(pending):
            reason = _finished(results[name], policy, device.wall_ns() - start)
            if reason:
                results[name].stop_reason = reason
                pending.remove(name)
        round_index += 1
        if on_round is not None:
            on_round(results)
    for name, call in calls.items():
        if name in results:
            between(f"host cost {name}")
            results[name].activities = list(getattr(samplers[name], "activities", []))
            results[name].host_samples = device.host_times_ns(call, policy.host_calls)
    return results
