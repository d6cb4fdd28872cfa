"""A CPU stand-in for the GPU, for testing the work loop end to end on machines without one.

It runs the real adapters on CPU tensors and times each call with the host clock. It is never chosen
by default: ``ki runner work --device cpu-test --product NAME`` asks for it, and every environment it
produces carries the note "measured on the CPU test device, not on NAME", so its runs are never
mistaken for GPU measurements.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable

from kernelindex.runner.environment import Probe, library_versions

Call = Callable[[], object]


class CpuSampler:
    method = "cpu_test_device_wall_clock"

    def __init__(self, call: Call, calls: int) -> None:
        self.call, self.calls = call, calls

    def sample(self) -> list[float]:
        out = []
        for _ in range(self.calls):
            start = time.perf_counter_ns()
            self.call()
            out.append(float(time.perf_counter_ns() - start))
        return out


class CpuTestDevice:
    torch_device = "cpu"

    def __init__(self, product: str, calls_per_sample: int = 10) -> None:
        self.name = product
        self.calls_per_sample = calls_per_sample

    def sampler(self, call: Call) -> CpuSampler:
        return CpuSampler(call, self.calls_per_sample)

    def host_times_ns(self, call: Call, calls: int) -> list[float]:
        return CpuSampler(call, calls).sample()

    def wall_ns(self) -> int:
        return time.perf_counter_ns()

    def synchronize(self) -> None:
        return None

    def poison(self, sizes: list[int]) -> None:
        return None

    def release(self) -> None:
        return None


def cpu_test_probe(product: str) -> Probe:
    return Probe(product=product, architecture="cpu", memory_bytes=0,
                 software={"python": platform.python_version(), **library_versions()},
                 notes=[f"measured on the CPU test device ({platform.machine()}), not on {product}"])
