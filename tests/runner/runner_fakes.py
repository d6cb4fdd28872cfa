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
