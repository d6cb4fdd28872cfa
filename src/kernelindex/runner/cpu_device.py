"""A fake device for testing the work loop end to end on machines without a GPU.

It runs the real adapters on CPU tensors, so correctness is checked for real, but it reports a
nominal time per call (50 µs, with a fixed small ripple so the statistics are not degenerate)
instead of a measurement: two runners on this device agree exactly, which is what the replication
tests need, and no figure from it can be mistaken for a timing. It is never chosen by default:
``ki runner work --test-device-product NAME`` (a hidden option) asks for it, and every environment
it produces says "CPU test device: nominal times, not measurements".
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Sequence
from itertools import count

from kernelindex.runner.environment import Probe, library_versions
from kernelindex.runner.rotation import Rotation

Call = Callable[[], object]
NOMINAL_NS = 50_000.0
RIPPLE = (0.0, 0.001, 0.002, 0.001, 0.0)


class NominalSampler:
    method = "cpu_test_device_nominal"

    def __init__(self, call: Call, calls: int, device: CpuTestDevice) -> None:
        self.call, self.calls, self.device = call, calls, device

    def sample(self) -> list[float]:
        out = []
        for _ in range(self.calls):
            self.call()
            out.append(NOMINAL_NS * (1 + RIPPLE[next(self.device.ticks) % len(RIPPLE)]))
        self.device.clock_ns += int(sum(out))  # budgets and warm-up count nominal time
        return out


class NominalStreamSampler:
    """Protocol v4's sampler on the CPU test device: each sample runs one of the R sets for real, the sets in turn
    (so rotation and binding are exercised, without K — or R — CPU calls a sample: a problem module of a few bytes
    has hundreds of sets), and reports the nominal time per call. Where the calls must not be captured
    (``no_capture``), it says ``eager`` and why, as the CUDA device's sampler does."""

    method = "cpu_test_device_nominal"

    def __init__(self, calls: Sequence[Call], rotation: Rotation, device: CpuTestDevice,
                 no_capture: str | None = None) -> None:
        self.calls, self.rotation, self.device = calls, rotation, device
        self.capture = "eager" if no_capture else "cuda_graph"
        self.capture_failure = f"graph capture not attempted: {no_capture}"[:300] if no_capture else None
        self.turn = count()

    def sample(self) -> list[float]:
        self.calls[next(self.turn) % len(self.calls)]()
        figure = NOMINAL_NS * (1 + RIPPLE[next(self.device.ticks) % len(RIPPLE)])
        self.device.clock_ns += int(figure * self.rotation.calls_per_replay)
        return [figure]


class CpuTestDevice:
    torch_device = "cpu"
    # Nominal, and small: the R sets a call rotates over are built on the CPU, so a rehearsal stays quick.
    l2_bytes = 4096

    def __init__(self, product: str, calls_per_sample: int = 10) -> None:
        self.name = product
        self.calls_per_sample = calls_per_sample
        self.clock_ns = 0
        self.ticks = count()

    def sampler(self, call: Call) -> NominalSampler:
        return NominalSampler(call, self.calls_per_sample, self)

    def host_times_ns(self, call: Call, calls: int) -> list[float]:
        return NominalSampler(call, calls, self).sample()

    def free_bytes(self) -> int:
        return 1 << 34

    def stream_sampler(self, calls: Sequence[Call], rotation: Rotation,
                       no_capture: str | None = None) -> NominalStreamSampler:
        return NominalStreamSampler(calls, rotation, self, no_capture)

    def kernel_busy(self, call: Call) -> tuple[float, int, float | None]:
        samples = NominalSampler(call, 10, self).sample()
        return sorted(samples)[len(samples) // 2], len(samples), None

    def wall_ns(self) -> int:
        return self.clock_ns

    def synchronize(self) -> None:
        return None

    def poison(self, sizes: list[int]) -> None:
        return None

    def release(self) -> None:
        return None


def cpu_test_probe(product: str) -> Probe:
    return Probe(product=product, architecture="cpu", memory_bytes=0,
                 software={"python": platform.python_version(), **library_versions()},
                 notes=[f"CPU test device ({platform.machine()}): nominal times, not measurements; not a {product}"])
