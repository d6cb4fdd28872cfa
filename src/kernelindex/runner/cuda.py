"""The CUDA device for the timing protocol: graph replay with the L2 flush inside the graph.

One sampler captures ``calls_per_sample`` repetitions of [zero a 256 MiB buffer (L2 flush),
record start event, the call, record end event] into one CUDA graph. A replay then gives that
many samples of the call's GPU time with a cold L2 and no Python launch cost between them. The
events are "external" events, which a graph records as event nodes. Where capture fails (a call
that synchronizes, allocates pinned memory, ...) the sampler falls back to the same sequence issued
eagerly with per-call events, and says so in ``method``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

import torch

from kernelindex.runner.timing import Call, Sampler, sampler_with_fallback

FLUSH_BYTES = 256 * 1024 * 1024


class _Events:
    def __init__(self, count: int, external: bool) -> None:
        kwargs = {"enable_timing": True, "external": True} if external else {"enable_timing": True}
        self.starts = [torch.cuda.Event(**kwargs) for _ in range(count)]
        self.ends = [torch.cuda.Event(**kwargs) for _ in range(count)]

    def elapsed_ns(self) -> list[float]:
        self.ends[-1].synchronize()
        return [s.elapsed_time(e) * 1e6 for s, e in zip(self.starts, self.ends, strict=True)]


class GraphSampler:
    method = "cuda_graph_replay"

    def __init__(self, call: Call, flush: Callable[[], object], calls_per_sample: int,
                 stream: torch.cuda.Stream | None = None) -> None:
        self.events = _Events(calls_per_sample, external=True)
        self.graph = torch.cuda.CUDAGraph()
        side = stream or torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up on the capture stream, as capture requires
            for _ in range(3):
                call()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        with torch.cuda.graph(self.graph, stream=side):
            for start, end in zip(self.events.starts, self.events.ends, strict=True):
                flush()
                start.record()
                call()
                end.record()
        torch.cuda.synchronize()

    def sample(self) -> list[float]:
        self.graph.replay()
        return self.events.elapsed_ns()


class EventSampler:
    method = "per_call_events"

    def __init__(self, call: Call, flush: Callable[[], object], calls_per_sample: int) -> None:
        self.call, self.flush = call, flush
        self.events = _Events(calls_per_sample, external=False)
        self.fallback_reason: str | None = None

    def sample(self) -> list[float]:
        for start, end in zip(self.events.starts, self.events.ends, strict=True):
            self.flush()
            start.record()
            self.call()
            end.record()
        return self.events.elapsed_ns()


class CudaDevice:
    """The timing protocol's device on the current CUDA GPU."""

    torch_device = "cuda"

    def __init__(self, calls_per_sample: int = 10, use_graphs: bool = True) -> None:
        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA device: `ki verify` measures on a local NVIDIA GPU")
        self.name = torch.cuda.get_device_name()
        self.calls_per_sample = calls_per_sample
        self.use_graphs = use_graphs
        self.flush_buffer = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
        # Inputs, the forward a backward region starts from, capture and replay all run on this
        # stream: autograd runs a backward on its forward's stream, so the capture stream must be it.
        self.stream = torch.cuda.Stream()

    def flush(self) -> None:
        self.flush_buffer.zero_()

    @contextlib.contextmanager
    def timing_context(self) -> Iterator[None]:
        self.stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.stream):
            yield
        torch.cuda.current_stream().wait_stream(self.stream)

    def sampler(self, call: Call) -> Sampler:
        def events(c: Call) -> Sampler:
            return EventSampler(c, self.flush, self.calls_per_sample)

        if not self.use_graphs:
            return events(call)
        return sampler_with_fallback(
            call, lambda c: GraphSampler(c, self.flush, self.calls_per_sample, self.stream), events,
            on_failure=torch.cuda.synchronize,
        )

    def peak_memory_bytes(self, call: Call) -> int:
        """Peak memory of the call: bytes allocated above what was allocated before it
        (``torch.cuda.max_memory_allocated`` after a reset)."""
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        result = call()
        torch.cuda.synchronize()
        del result
        return int(torch.cuda.max_memory_allocated() - before)

    def host_times_ns(self, call: Call, calls: int) -> list[float]:
        times = []
        for _ in range(calls):
            torch.cuda.synchronize()
            start = time.perf_counter_ns()
            call()
            times.append(float(time.perf_counter_ns() - start))
        torch.cuda.synchronize()
        return times

    def wall_ns(self) -> int:
        return time.perf_counter_ns()

    def synchronize(self) -> None:
        torch.cuda.synchronize()

    def release(self) -> None:
        """Return the memory of a finished case (graphs, inputs) to the driver."""
        torch.cuda.synchronize()
        torch.cuda.empty_cache()

    def poison(self, sizes: list[int]) -> None:
        """Leave blocks of these byte sizes, filled with 0xFF (NaN for floats), in the caching
        allocator, so that an output the implementation never writes reads as NaN."""
        blocks = [torch.full((size,), 0xFF, dtype=torch.uint8, device="cuda") for size in sizes if size > 0]
        torch.cuda.synchronize()
        del blocks


def do_bench_median_ns(call: Call) -> float | None:
    """``triton.testing.do_bench``'s median for the same call, in ns (None without Triton)."""
    try:
        from triton.testing import do_bench
    except ImportError:
        return None
    return float(do_bench(call, warmup=25, rep=100, return_mode="median")) * 1e6


def _copy_median_ns(device: CudaDevice, nbytes: int, samples: int) -> float:
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_(0, 255, generator=gen)
    dst = torch.empty_like(src)
    sampler = EventSampler(lambda: dst.copy_(src), device.flush, device.calls_per_sample)
    sampler.sample()
    times = sorted(t for _ in range(samples) for t in sampler.sample())
    return times[len(times) // 2]


def _stream_median_ns(device: CudaDevice, call: Call, samples: int) -> float:
    sampler = EventSampler(call, device.flush, device.calls_per_sample)
    sampler.sample()
    times = sorted(t for _ in range(samples) for t in sampler.sample())
    return times[len(times) // 2]


def read_write_bandwidth(device: CudaDevice, nbytes: int = 1 << 30, samples: int = 3) -> tuple[float, float]:
    """(read-only, write-only) bandwidth in bytes/s: a sum over 1 GiB (reads it, writes 4 bytes per
    row of 64 KiB) and a fill of 1 GiB. On an H200 a read stream runs faster than a copy, so a floor
    from the copy bandwidth alone would not bound a read-dominated call from below."""
    data = torch.ones(nbytes // 4, dtype=torch.float32, device="cuda").view(-1, 16384)
    sums = torch.empty(data.shape[0], dtype=torch.float32, device="cuda")
    read = nbytes / (_stream_median_ns(device, lambda: torch.sum(data, dim=1, out=sums), samples) * 1e-9)
    write = nbytes / (_stream_median_ns(device, lambda: data.fill_(1.0), samples) * 1e-9)
    return read, write


def copy_bandwidth(device: CudaDevice, nbytes: int = 1 << 30, samples: int = 3) -> float:
    """Device-to-device copy bandwidth in bytes/s (bytes read + bytes written): the ceiling of the
    measured floor. Timed with per-call events, not graph replay: captured in a CUDA graph, a
    device-to-device ``copy_`` becomes a memcpy node, which ran at about 65% of the eager copy's
    bandwidth on an H200 (bench/RESULTS.md)."""
    median = _copy_median_ns(device, nbytes, samples)
    torch.cuda.empty_cache()
    return 2 * nbytes / (median * 1e-9)
