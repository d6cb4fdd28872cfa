"""Where a runner v3 case's time goes, phase by phase, on the CPU (fused-moe under runner v3, 2026-12-02).

Runs the runner's own path (``campaign.verify_operation`` → ``verify.verify_case``: correctness checks, per
region the setup with its first call, the warm-up, the interleaved sampling, the cross-check and the host
cost) on a CPU device that costs the host what the CUDA device costs it: every sample batch is a real
PyTorch profiler session (``CuptiSampler``'s calls, ``record_function`` ranges, the trace read back with
``cupti._events``-style accessors and parsed by ``trace.calls_from_trace``), on the wall clock. Only the
activities differ (CPU, since there is no GPU): a sample is the call's host range, not a device time, so
no figure from here is a measurement of the operation. What it gives: the number of calls and profiler
sessions of every phase, and what each phase costs the host, per case, region and implementation.

    PYTHONPATH=src python bench/moe_phases.py --cases /tmp/moe/small --operation fused-moe [--max-cases 1]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from kernelindex import registry
from kernelindex.runner import timing as timing_module
from kernelindex.runner import verify as verify_module
from kernelindex.runner.campaign import verify_operation
from kernelindex.runner.cpu_device import cpu_test_probe
from kernelindex.runner.environment import environment_manifest
from kernelindex.runner.timing import TimingPolicy
from kernelindex.runner.trace import CALL_PREFIX, CallActivity, TraceEvent, calls_from_trace

Call = Callable[[], object]


class Phases:
    """Seconds and counts per (case, region, implementation, phase)."""

    def __init__(self) -> None:
        self.seconds: dict[tuple[str, ...], float] = defaultdict(float)
        self.counts: dict[tuple[str, ...], int] = defaultdict(int)
        self.where: dict[str, str] = {"case": "", "region": "checks", "impl": ""}

    def add(self, phase: str, seconds: float, calls: int = 0) -> None:
        key = (self.where["case"], self.where["region"], self.where["impl"], phase)
        self.seconds[key] += seconds
        self.counts[key] += calls


PHASES = Phases()


class ProfiledCpuSampler:
    """``cupti.CuptiSampler`` on the CPU: the same profiler session per batch, the same ranges and parse."""

    method = "cupti-device-time"  # the runner then fills the v3 fields as it does on the GPU

    def __init__(self, call: Call, calls: int, key: str) -> None:
        self.call, self.calls, self.key = call, calls, key
        self.activities: list[CallActivity] = []

    def sample(self) -> list[float]:
        start = time.perf_counter()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            opened = time.perf_counter()
            for i in range(self.calls):
                with record_function(f"{CALL_PREFIX}{i}"):
                    self.call()
            called = time.perf_counter()
        closed = time.perf_counter()
        events = [TraceEvent(e.name(), e.device_type().name == "CUDA", e.start_ns(), e.end_ns(), e.correlation_id(),
                             bool(e.is_user_annotation())) for e in prof.profiler.kineto_results.events()]
        read = time.perf_counter()
        calls_from_trace(events, self.calls)
        ranges = sorted((e.start_ns, e.end_ns) for e in events if e.name.startswith(CALL_PREFIX))
        parsed = time.perf_counter()
        PHASES.where["impl"] = self.key
        PHASES.add("profiled calls", called - opened, self.calls)
        PHASES.add("profiler open+close", (opened - start) + (closed - called))
        PHASES.add("trace read (events)", read - closed)
        PHASES.add("trace parse", parsed - read)
        PHASES.add("events traced", 0, len(events))
        found = [CallActivity(intervals=[r]) for r in ranges[: self.calls]]
        self.activities.extend(found)
        return [float(a.device_ns) for a in found]


class PhaseDevice:
    """A CPU device on the wall clock whose sampler is the profiled one; it times every phase it serves."""

    torch_device = "cpu"

    def __init__(self, name: str, trace_calls: int = 25, calls_per_sample: int = 10) -> None:
        self.name, self.trace_calls, self.calls_per_sample = name, trace_calls, calls_per_sample
        self.keys: dict[int, str] = {}

    def sampler(self, call: Call) -> ProfiledCpuSampler:
        return ProfiledCpuSampler(call, self.trace_calls, PHASES.where["impl"])

    def _timed(self, phase: str, call: Call, calls: int) -> list[float]:
        times = []
        start = time.perf_counter()
        for _ in range(calls):
            t = time.perf_counter_ns()
            call()
            times.append(float(time.perf_counter_ns() - t))
        PHASES.add(phase, time.perf_counter() - start, calls)
        return times

    def cross_check(self, call: Call) -> tuple[str, float, str | None]:
        """CudaDevice.cross_check for a call that cannot be captured: 3 warm calls, then per-call events in
        batches of ``calls_per_sample`` until 5 batches or 0.4 s of call time."""
        self._timed("cross-check", call, 3)
        times = self._timed("cross-check", call, self.calls_per_sample)
        while len(times) < 5 * self.calls_per_sample and sum(times) < 0.4e9:
            times += self._timed("cross-check", call, self.calls_per_sample)
        return "per_call_events", sorted(times)[len(times) // 2], "CPU phase device: no graph capture"

    def host_cost(self, call: Call, calls: int) -> tuple[float, float]:
        times = self._timed("host cost (wall, CPU)", call, calls)
        return sum(times) / calls, sum(times) / calls

    def host_times_ns(self, call: Call, calls: int) -> list[float]:
        return self._timed("host time per call", call, calls)

    def peak_memory_bytes(self, call: Call, inputs: object = ()) -> int:
        call()  # one call, inside the setup phase's time and count
        return 0

    def wall_ns(self) -> int:
        return time.perf_counter_ns()

    def synchronize(self) -> None:
        return None

    def poison(self, sizes: list[int]) -> None:
        return None

    def release(self) -> None:
        return None


def _instrument() -> None:
    """Wrap the runner's phases (module attributes the verifier looks up at call time) with timers."""
    check, setup, warm_up = verify_module._check, verify_module._setup, timing_module.warm_up

    def timed_check(ctx: Any, workload: Any, adapter: Any, gradients: bool) -> Any:
        PHASES.where.update(region="checks", impl=adapter.key)
        start = time.perf_counter()
        try:
            return check(ctx, workload, adapter, gradients)
        finally:
            PHASES.add("correctness (3 trials, float64 reference)", time.perf_counter() - start)

    def timed_setup(ctx: Any, workload: Any, o: Any) -> Any:
        PHASES.where.update(region=o.region, impl=o.adapter.key)
        start = time.perf_counter()
        try:
            return setup(ctx, workload, o)
        finally:
            PHASES.add("setup: inputs, first call (compile), peak-memory call", time.perf_counter() - start, 2)

    def timed_warm_up(call: Call, sampler: Any, device: Any, policy: TimingPolicy, *more: Any) -> int:
        PHASES.where["impl"] = getattr(sampler, "key", "")
        start = time.perf_counter()
        before = dict(PHASES.seconds)
        n = warm_up(call, sampler, device, policy, *more)  # more: the step limit's safe point and the name
        spent = time.perf_counter() - start
        inner = sum(v - before.get(k, 0.0) for k, v in PHASES.seconds.items())
        PHASES.add("warm-up plain calls", spent - inner, policy.warmup_calls)
        return n

    verify_module._check, verify_module._setup, timing_module.warm_up = timed_check, timed_setup, timed_warm_up


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=Path, required=True, help="a prepared cases folder (cases.jsonl, regions.json)")
    parser.add_argument("--operation", default="fused-moe")
    parser.add_argument("--max-cases", type=int, default=0)
    parser.add_argument("--impl", default="")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from campaign import load_cases

    operation = registry.load_operation(args.operation)
    cases, regions = load_cases(args.cases, args.operation)
    cases = cases[: args.max_cases] if args.max_cases else cases
    _instrument()
    device = PhaseDevice("NVIDIA H200")
    environment = environment_manifest(cpu_test_probe("NVIDIA H200"))
    # The H200 campaign's policy (ki runner campaign run: --time-budget 0.5 --hard-limit 40 --host-calls 20).
    policy = TimingPolicy(min_samples=100, time_budget_ns=500_000_000, host_calls=20, hard_limit_ns=40_000_000_000)
    per_case: list[dict[str, Any]] = []

    def on_event(kind: str, data: dict[str, Any]) -> None:
        if kind == "case":
            PHASES.where.update(case=data["label"], region="checks", impl="")
            per_case.append({"case": data["label"], "started": time.perf_counter()})
        elif kind == "case_done":
            per_case[-1]["seconds"] = round(time.perf_counter() - per_case[-1].pop("started"), 2)
            print(f"case {per_case[-1]['case']}: {per_case[-1]['seconds']} s", flush=True)

    start = time.perf_counter()
    result = verify_operation(operation, cases, args.impl.split(",") if args.impl else None, device=device,
                              environment=environment, runner={"name": "phases", "key_id": "sha256:" + "0" * 64},
                              policy=policy, calls_per_sample=10, campaign="phases", on_event=on_event,
                              regions=regions)
    total = time.perf_counter() - start
    rows = [{"case": c, "region": r, "impl": i, "phase": p, "seconds": round(s, 3),
             "count": PHASES.counts[(c, r, i, p)]} for (c, r, i, p), s in sorted(PHASES.seconds.items())]
    by_phase: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for row in rows:
        by_phase[row["phase"]][0] += row["seconds"]
        by_phase[row["phase"]][1] += row["count"]
    print(f"\n{len(result.runs())} runs ({', '.join(sorted({r.spec.status for r in result.runs()}))}) in {total:.1f} s")
    print(f"{'phase':52} {'seconds':>9} {'share':>6} {'count':>9}")
    for phase, (seconds, count) in sorted(by_phase.items(), key=lambda kv: -kv[1][0]):
        print(f"{phase:52} {seconds:9.2f} {seconds / total:6.1%} {count:9d}")
    print(f"{'(not in a phase: manifests, statistics, floors)':52} {total - sum(v[0] for v in by_phase.values()):9.2f}")
    if args.json:
        args.json.write_text(json.dumps({"total_s": round(total, 2), "cases": per_case, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
