"""Runner protocol v3 on CUDA: device time from CUPTI (the PyTorch profiler's CUDA activity), the graph
replay cross-check, and the call's cost to the host.

Why the PyTorch profiler rather than ``cupti-python``: it is in every torch the runner supports (no
extra package to pin), it gives kernels, memcpys and memsets with start/end timestamps and the
correlation id of the runtime call that launched each, and host ranges (``record_function``) that
say which timed call launched what. On an H200 a profiled batch of 50 calls cost about 13 ms and its
parse 1 ms (the campaign ledgers), so taking the protocol's minimum samples is cheap.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from kernelindex.runner.timing import Call
from kernelindex.runner.trace import CALL_PREFIX, CallActivity, TraceEvent, calls_from_trace


def _events(prof: profile) -> list[TraceEvent]:
    out = []
    for e in prof.profiler.kineto_results.events():  # type: ignore[union-attr]
        on_device = e.device_type().name == "CUDA"
        out.append(TraceEvent(e.name(), on_device, e.start_ns(), e.end_ns(), e.correlation_id(),
                              bool(e.is_user_annotation())))
    return out


class CuptiSampler:
    """One sample batch: ``calls`` timed calls under the profiler, each after an L2 flush (launched
    outside the call's range, so never in its figure). Keeps every call's span and syncs."""

    method = "cupti-device-time"

    def __init__(self, call: Call, flush: Callable[[], object], calls: int) -> None:
        self.call, self.flush, self.calls = call, flush, calls
        self.activities: list[CallActivity] = []

    def sample(self) -> list[float]:
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for i in range(self.calls):
                self.flush()
                with record_function(f"{CALL_PREFIX}{i}"):
                    self.call()
            torch.cuda.synchronize()
        found = calls_from_trace(_events(prof), self.calls)
        self.activities.extend(found)
        return [float(a.device_ns) for a in found]


def graph_difference_ns(call: Call, flush: Callable[[], object], stream: torch.cuda.Stream,
                        calls: int = 10, replays: int = 15, spend_ns: float = 0.4e9) -> float:
    """The cross-check on a capturable call: a graph of ``calls`` × [flush, call] and one of ``calls``
    × [flush], each replay timed whole by two events; per call, the median difference over ``calls``.
    No event sits between the flush and the call, so the few µs that per-call events add are not in it.
    ``replays`` pairs, or fewer (at least 3) once ``spend_ns`` of device time is spent."""
    graphs = []
    for with_call in (True, False):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(calls):
                flush()
                if with_call:
                    call()
        graphs.append(graph)
    torch.cuda.synchronize()
    differences: list[float] = []
    spent = 0.0
    while len(differences) < 3 or (len(differences) < replays and spent < spend_ns):  # long calls: fewer
        totals = []
        for graph in graphs:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            totals.append(start.elapsed_time(end) * 1e6)
        spent += sum(totals)
        differences.append((totals[0] - totals[1]) / calls)
    del graphs
    return statistics.median(differences)


def host_cost_ns(call: Call, calls: int) -> tuple[float, float]:
    """(wall, host CPU) time per call over ``calls`` back-to-back calls, no flush, the device drained
    before and once at the end: a call that waits for the device inside pays it in its wall time. The CPU
    time (the process's, all threads: autograd runs a backward on its own thread) stops before the final
    drain, whose spin-wait is no work of the calls; a wait inside a call (``.item()``) is in it."""
    torch.cuda.synchronize()
    wall, cpu = time.perf_counter_ns(), time.process_time_ns()
    for _ in range(calls):
        call()
    cpu_ns = time.process_time_ns() - cpu
    torch.cuda.synchronize()
    return (time.perf_counter_ns() - wall) / calls, cpu_ns / calls
