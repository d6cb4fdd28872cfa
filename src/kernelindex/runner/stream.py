"""Runner protocol v4 on CUDA: the stream time of a call (``runner/rotation.py`` has the arithmetic).

``GraphStreamSampler`` captures K calls, call i on input/output set i mod R, in one CUDA graph; a sample is one
replay timed whole by two events, divided by K. The outputs of the last R calls are kept alive while capturing,
so call i's outputs take the memory call i − R freed: outputs rotate with the inputs, and each call's
write-back drains while the calls after it run, inside the replay. Where capture fails (the call synchronises
with the host), ``EagerStreamSampler`` runs the same K calls eagerly between the same two events: the host's
stalls are then in the figure, and the run says so (``timing.stream.capture = "eager"``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from kernelindex.runner.device_timing import STREAM_TIME_METHOD as GRAPH_METHOD
from kernelindex.runner.rotation import Rotation, per_call_ns, run_rotated
from kernelindex.runner.timing import Call


class _Replay:
    def __init__(self, rotation: Rotation) -> None:
        self.rotation = rotation
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)

    def elapsed_per_call(self) -> list[float]:
        self.end.synchronize()
        return [per_call_ns(self.start.elapsed_time(self.end) * 1e6, self.rotation.calls_per_replay)]


class GraphStreamSampler(_Replay):
    method = GRAPH_METHOD
    capture = "cuda_graph"
    capture_failure: str | None = None

    def __init__(self, calls: Sequence[Call], rotation: Rotation, stream: torch.cuda.Stream) -> None:
        super().__init__(rotation)
        # The graph reads and writes the sets' tensors by address: it must keep them (the calls hold them) alive
        # as long as it can be replayed. Without this, the caller dropped sets 1…R−1, their memory went back to
        # the allocator (and to the driver at the next empty_cache), and replays faulted (an illegal memory access
        # on the H100, 2026-12-07: every case with R > 1 after the first release).
        self.calls = list(calls)
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):  # every set warmed on the capture stream, as capture requires
            for call in calls:
                call()
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph, stream=stream):
            run_rotated(calls, rotation)
        torch.cuda.synchronize()
        self.graph.replay()  # a fault of the captured graph shows here, at its own implementation's setup
        torch.cuda.synchronize()

    def sample(self) -> list[float]:
        self.start.record()
        self.graph.replay()
        self.end.record()
        return self.elapsed_per_call()


class EagerStreamSampler(_Replay):
    method = GRAPH_METHOD
    capture = "eager"

    def __init__(self, calls: Sequence[Call], rotation: Rotation, capture_failure: str) -> None:
        super().__init__(rotation)
        self.calls = calls
        self.capture_failure: str | None = capture_failure[:300]

    def sample(self) -> list[float]:
        self.start.record()
        run_rotated(self.calls, self.rotation)
        self.end.record()
        return self.elapsed_per_call()


def stream_sampler(calls: Sequence[Call], rotation: Rotation, stream: torch.cuda.Stream,
                   no_capture: str | None = None) -> GraphStreamSampler | EagerStreamSampler:
    """The graph sampler, or the eager one with the reason where the calls cannot (or must not) be captured."""
    if no_capture:
        return EagerStreamSampler(calls, rotation, f"graph capture not attempted: {no_capture}")
    try:
        return GraphStreamSampler(calls, rotation, stream)
    except Exception as exc:  # noqa: BLE001 - any capture failure means: time eagerly, and say why
        torch.cuda.synchronize()
        return EagerStreamSampler(calls, rotation, f"graph capture failed: {type(exc).__name__}: {exc}")
