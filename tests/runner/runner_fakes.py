"""A fake device with a fake clock for the runner tests (imported by name: tests/runner is on sys.path)."""

from __future__ import annotations

from collections.abc import Callable


class FakeClock:
    def __init__(self) -> None:
        self.now = 0

    def advance(self, ns: float) -> None:
        self.now += int(ns)


class FakeSampler:
    method = "fake_graph_replay"

    def __init__(self, call: Callable[[], object], clock: FakeClock, calls: int, log: list[object]) -> None:
        self.call, self.clock, self.calls, self.log = call, clock, calls, log

    def sample(self) -> list[float]:
        self.log.append(self.call)
        out = []
        for _ in range(self.calls):
            start = self.clock.now
            self.call()
            out.append(float(self.clock.now - start))
        return out


class FakeDevice:
    """A device whose clock only moves when the fake implementations say so."""

    torch_device = "cpu"

    def __init__(self, name: str = "Fake GPU", calls_per_sample: int = 10, host_ns: float = 4_000.0) -> None:
        self.name = name
        self.clock = FakeClock()
        self.calls_per_sample = calls_per_sample
        self.host_ns = host_ns
        self.sample_log: list[object] = []

    def sampler(self, call: Callable[[], object]) -> FakeSampler:
        return FakeSampler(call, self.clock, self.calls_per_sample, self.sample_log)

    def host_times_ns(self, call: Callable[[], object], calls: int) -> list[float]:
        return [self.host_ns] * calls

    def wall_ns(self) -> int:
        return self.clock.now

    def synchronize(self) -> None:
        return None

    def poison(self, sizes: list[int]) -> None:
        return None

    def release(self) -> None:
        return None


class FailingCaptureDevice(FakeDevice):
    """A fake device whose graph capture always fails, as a call that synchronizes makes it."""

    def sampler(self, call: Callable[[], object]) -> object:
        from kernelindex.runner.timing import sampler_with_fallback

        def graph(c: Callable[[], object]) -> FakeSampler:
            raise RuntimeError("operation not permitted when stream is capturing")

        def events(c: Callable[[], object]) -> FakeSampler:
            sampler = FakeSampler(c, self.clock, self.calls_per_sample, self.sample_log)
            sampler.method = "per_call_events"
            return sampler

        return sampler_with_fallback(call, graph, events)


class FakeTraceSampler:
    """Protocol v3's sampler on a fake clock: each call's device time (the clock's advance during it)
    becomes a fake CUPTI trace — a flush kernel launched before the call's range, the call's work as two
    overlapping kernels on two streams, a device-to-host copy and a stream sync when the device says the
    call syncs — which the real ``trace.calls_from_trace`` turns back into device time, span and syncs."""

    method = "cupti-device-time"

    def __init__(self, call: Callable[[], object], device: FakeTraceDevice) -> None:
        self.call, self.device = call, device
        self.activities: list[object] = []

    def _call_events(self, i: int, t0: int, device_ns: int) -> list[object]:
        """Kernels a and b overlap (their union is the work), the copy follows 900 ns later."""
        from kernelindex.runner.trace import CALL_PREFIX, TraceEvent

        c, syncs = 1000 * (i + 1), self.device.syncs
        work = device_ns - (100 if syncs else 0)
        end = t0 + 1_000 + work
        copy = [TraceEvent("cudaMemcpyAsync", False, t0 + 500, t0 + 600, c + 3),
                TraceEvent("Memcpy DtoH (Device -> Pinned)", True, end + 900, end + 1_000, c + 3),
                TraceEvent("cudaStreamSynchronize", False, t0 + 600, end + 1_000, c + 4),
                TraceEvent("Stream Sync", True, end + 1_000, end + 1_100, c + 4)] if syncs else []
        return [
            TraceEvent("cudaLaunchKernel", False, t0 - 900, t0 - 800, c),  # the flush, before the range
            TraceEvent("reduce_kernel (flush)", True, t0 - 60_000, t0 + 999, c),
            TraceEvent(f"{CALL_PREFIX}{i}", False, t0, end + 2_000, c + 9, annotation=True),
            TraceEvent(f"{CALL_PREFIX}{i}", True, t0, end + 5_000, c + 9, annotation=True),
            TraceEvent("cudaLaunchKernel", False, t0 + 100, t0 + 200, c + 1),
            TraceEvent("cudaLaunchKernel", False, t0 + 300, t0 + 400, c + 2),
            TraceEvent("kernel_a", True, t0 + 1_000, t0 + 1_000 + work * 2 // 3, c + 1),  # overlaps kernel_b
            TraceEvent("kernel_b", True, t0 + 1_000 + work // 3, end, c + 2),
            *copy,
        ]

    def sample(self) -> list[float]:
        from kernelindex.runner.trace import calls_from_trace

        events: list[object] = []
        for i in range(self.device.calls_per_sample):
            start = self.device.clock.now
            self.call()
            events += self._call_events(i, 1_000_000 * (i + 1), self.device.clock.now - start)
        found = calls_from_trace(events, self.device.calls_per_sample)  # type: ignore[arg-type]
        self.activities.extend(found)
        return [float(a.device_ns) for a in found]


class FakeTraceDevice(FakeDevice):
    """A v3 device: fake CUPTI traces, a cross-check and a host cost given by the test."""

    def __init__(self, *, check: tuple[str, float, str | None], wall_ns: float, syncs: bool = False,
                 name: str = "NVIDIA H200") -> None:
        super().__init__(name=name)
        self.check, self.wall, self.syncs = check, wall_ns, syncs

    def sampler(self, call: Callable[[], object]) -> FakeTraceSampler:  # type: ignore[override]
        return FakeTraceSampler(call, self)

    def cross_check(self, call: Callable[[], object]) -> tuple[str, float, str | None]:
        return self.check

    def host_cost(self, call: Callable[[], object], calls: int) -> tuple[float, float]:
        return self.wall, self.wall * 0.9
