"""The CUDA device for the timing protocol (v3): CUPTI device time, with the L2 flush before each call.

Each sample batch runs ``trace_calls`` calls under the PyTorch profiler (``cupti.CuptiSampler``); every
call is preceded by an L2 flush that *reads* a 256 MiB buffer (a reduction into a few KiB): flushing by
zeroing it left dirty lines that the next kernel paid to write back (the campaign ledgers, probe of
2026-12-01), so v3 flushes by reading. Graph replay (``GraphSampler``: the v2 figure) and per-call CUDA
events (``EventSampler``) remain, as the cross-check recorded beside the device time.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

import torch

from kernelindex.policy.ceilings import CEILING_SIZES, CeilingFigure
from kernelindex.policy.floor import CEILING_PROBE_BYTES
from kernelindex.runner.cupti import CuptiSampler, graph_difference_ns, host_cost_ns
from kernelindex.runner.memory import peak_with_kept_results, result_storage_bytes
from kernelindex.runner.rotation import Rotation
from kernelindex.runner.stream import stream_sampler
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

    def __init__(self, calls_per_sample: int = 10, use_graphs: bool = True, trace_calls: int = 25) -> None:
        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA device: `ki verify` measures on a local NVIDIA GPU")
        self.name = torch.cuda.get_device_name()
        self.calls_per_sample = calls_per_sample
        self.use_graphs = use_graphs  # the cross-check: graph replay, or per-call events only
        self.trace_calls = trace_calls
        self.flush_buffer = torch.ones(FLUSH_BYTES // 8, dtype=torch.int64, device="cuda").view(-1, 4096)
        self.flush_sums = torch.empty(self.flush_buffer.shape[0], dtype=torch.int64, device="cuda")
        # Inputs, the forward a backward region starts from, capture and replay all run on this
        # stream: autograd runs a backward on its forward's stream, so the capture stream must be it.
        self.stream = torch.cuda.Stream()

    def flush(self) -> None:
        """Evict the L2 by reading 256 MiB (clean lines only: nothing left to write back)."""
        torch.sum(self.flush_buffer, dim=1, out=self.flush_sums)

    @contextlib.contextmanager
    def timing_context(self) -> Iterator[None]:
        self.stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.stream):
            yield
        torch.cuda.current_stream().wait_stream(self.stream)

    def sampler(self, call: Call) -> Sampler:
        return CuptiSampler(call, self.flush, self.trace_calls)

    @property
    def l2_bytes(self) -> int:
        return int(torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size)

    def free_bytes(self) -> int:
        torch.cuda.empty_cache()
        return int(torch.cuda.mem_get_info()[0])

    def stream_sampler(self, calls: Sequence[Call], rotation: Rotation, no_capture: str | None = None) -> Sampler:
        """Protocol v4's sampler: the stream time of K calls over R rotating sets (runner/stream.py)."""
        return stream_sampler(calls, rotation, self.stream, no_capture)

    def kernel_busy(self, call: Call, batches: int = 2) -> tuple[float, int, float | None]:
        """Protocol v3's device time (CUPTI union after a reading flush), v4's secondary figure: (median ns,
        samples, median span ns)."""
        sampler = CuptiSampler(call, self.flush, self.trace_calls)
        sampler.sample()  # the profiler's own first-use cost stays out
        sampler.activities.clear()
        times = [t for _ in range(batches) for t in sampler.sample()]
        spans = sorted(a.span_ns for a in sampler.activities)
        return statistics.median(times), len(times), (spans[len(spans) // 2] if spans else None)

    def cross_check(self, call: Call, no_capture: str | None = None) -> tuple[str, float, str | None]:
        """(method, median ns per call, why capture failed or was not tried): graph replay where the call can
        be captured, else per-call CUDA events (v2's fallback) with the same flush. ``no_capture``: why this
        call must not be captured (``problem_module.rebound_state``), said as the reason."""
        if no_capture:
            reason: str | None = f"graph capture not attempted: {no_capture}"[:300]
        elif self.use_graphs:
            try:
                for _ in range(3):  # capture needs the call warmed up on the capture stream (the current one)
                    call()
                torch.cuda.synchronize()
                return "cuda_graph_replay", graph_difference_ns(call, self.flush, self.stream), None
            except Exception as exc:  # noqa: BLE001 - a call that cannot be captured is timed by events
                torch.cuda.synchronize()
                reason = f"graph capture failed: {type(exc).__name__}: {exc}"[:300]
        else:
            reason = "graph replay not asked for (--no-graphs)"
        sampler = EventSampler(call, self.flush, self.calls_per_sample)
        times = sampler.sample()
        while len(times) < 5 * self.calls_per_sample and sum(times) < 0.4e9:  # long calls: fewer batches
            times += sampler.sample()
        times.sort()
        return "per_call_events", times[len(times) // 2], reason

    def host_cost(self, call: Call, calls: int) -> tuple[float, float]:
        return host_cost_ns(call, calls)

    def v2_sampler(self, call: Call) -> Sampler:
        """Protocol v2's sampler (graph replay with per-call events, or events alone), kept for comparisons."""
        def events(c: Call) -> Sampler:
            return EventSampler(c, self.flush, self.calls_per_sample)

        return sampler_with_fallback(
            call, lambda c: GraphSampler(c, self.flush, self.calls_per_sample, self.stream), events,
            on_failure=torch.cuda.synchronize,
        )

    def peak_memory_bytes(self, call: Call, inputs: Iterable[object] = ()) -> int:
        """Peak memory of the call: bytes allocated above what was allocated before it
        (``torch.cuda.max_memory_allocated`` after a reset), plus the result tensors the call hands
        back that were allocated before it and kept (a fused loss's backward returns the gradient its
        forward computed: 0 new bytes, though the call writes it). Tensors of ``inputs`` (what an
        in-place kernel writes into) are not counted: such a call still says 0."""
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        result = call()
        torch.cuda.synchronize()
        grown = torch.cuda.memory_allocated() - before
        held = result_storage_bytes(result, inputs)
        del result
        return peak_with_kept_results(int(torch.cuda.max_memory_allocated() - before), int(grown), held)

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
        """Return the allocator's cached, unused memory (a finished case's graphs and inputs, a call's freed
        temporaries) to the driver."""
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


def read_write_bandwidth(device: CudaDevice, nbytes: int = CEILING_PROBE_BYTES,
                         samples: int = 3) -> tuple[float, float]:
    """(read-only, write-only) bandwidth in bytes/s: a sum over 1 GiB (reads it, writes 4 bytes per
    row of 64 KiB) and a fill of 1 GiB. On an H200 a read stream runs faster than a copy, so a floor
    from the copy bandwidth alone would not bound a read-dominated call from below."""
    data = torch.ones(nbytes // 4, dtype=torch.float32, device="cuda").view(-1, 16384)
    sums = torch.empty(data.shape[0], dtype=torch.float32, device="cuda")
    read = nbytes / (_stream_median_ns(device, lambda: torch.sum(data, dim=1, out=sums), samples) * 1e-9)
    write = nbytes / (_stream_median_ns(device, lambda: data.fill_(1.0), samples) * 1e-9)
    return read, write


def copy_bandwidth(device: CudaDevice, nbytes: int = CEILING_PROBE_BYTES, samples: int = 3) -> float:
    """Device-to-device copy bandwidth in bytes/s (bytes read + bytes written): the ceiling of the
    measured floor. Timed with per-call events, not graph replay: captured in a CUDA graph, a
    device-to-device ``copy_`` becomes a memcpy node, which ran at about 65% of the eager copy's
    bandwidth on an H200 (the campaign ledgers)."""
    median = _copy_median_ns(device, nbytes, samples)
    torch.cuda.empty_cache()
    return 2 * nbytes / (median * 1e-9)


CEILING_GEMM = 8192  # the ceiling GEMM's M = N = K


def _gemm_median_ns(device: CudaDevice, size: int, samples: int) -> float:
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    a = torch.randn(size, size, dtype=torch.float16, device="cuda", generator=gen)
    b = torch.randn(size, size, dtype=torch.float16, device="cuda", generator=gen) * size**-0.5
    out = torch.empty(size, size, dtype=torch.float16, device="cuda")
    return _stream_median_ns(device, lambda: torch.matmul(a, b.T, out=out), samples)


def gemm_ceiling(device: CudaDevice, size: int = CEILING_GEMM, samples: int = 3) -> float:
    """FLOP/s of a large fp16 GEMM, ``torch.matmul(a, b.T)`` (cuBLAS) with M = N = K = ``size`` on N(0, 1)
    data: the attainable compute rate of fp16 GEMMs on this GPU (the compute ceiling beside the datasheet
    peak; policy/floor.attainable_compute). Per-call events, as the bandwidth ceilings."""
    median = _gemm_median_ns(device, size, samples)
    torch.cuda.empty_cache()
    return 2 * size**3 / (median * 1e-9)


def ceiling_sweep(device: CudaDevice, sizes: tuple[int, ...] = CEILING_SIZES, samples: int = 3) -> list[CeilingFigure]:
    """The three ceiling kernels (copy, read-only, write-only) at each buffer size: the attainable floor takes
    the best of them all (``policy/ceilings``). A size the device cannot hold (a copy needs two buffers) is
    left out, never guessed."""
    figures: list[CeilingFigure] = []
    for nbytes in sizes:
        try:
            copy = copy_bandwidth(device, nbytes, samples)
            read, write = read_write_bandwidth(device, nbytes, samples)
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
            continue
        torch.cuda.empty_cache()
        figures += [CeilingFigure("copy", nbytes, copy), CeilingFigure("read", nbytes, read),
                    CeilingFigure("write", nbytes, write)]
    return figures
