"""Protocol v4 inside a case: the sets a call rotates over and the sampler that times them (``runner/stream.py``
on CUDA), and the facts a run records of it (``timing.stream``, ``timing.kernel_busy``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from kernelindex.runner.memory import result_storage_bytes, storage_bytes
from kernelindex.runner.rotation import Rotation, rotation
from kernelindex.runner.timing import Call, Sampler


@runtime_checkable
class StreamDevice(Protocol):
    """A device that times protocol v4's stream time (CUDA; the CPU test device)."""

    @property
    def l2_bytes(self) -> int: ...

    def free_bytes(self) -> int: ...

    def stream_sampler(self, calls: list[Call], rotation: Rotation, no_capture: str | None = None) -> Sampler: ...


@dataclass(frozen=True)
class StreamFacts:
    rotation: Rotation
    capture: str  # cuda_graph | eager
    capture_failure: str | None = None
    unrotated_bytes: int | None = None  # state every call shares, not rotated (a problem module's parameters)


def footprint_bytes(inputs: dict[str, Any], result: object) -> int:
    """One call's own tensors: its distinct input storages and what its result holds beyond them."""
    return storage_bytes(inputs.values()) + result_storage_bytes(result, inputs.values())


def rotated_sampler(device: StreamDevice, call: Call, inputs: dict[str, Any], result: object,
                    another_set: Callable[[int], Call], seed: int,
                    no_capture: str | None = None) -> tuple[Sampler, StreamFacts]:
    """The stream sampler over R sets: ``call`` on ``inputs`` is set 0; ``another_set(seed + i)`` binds set i to
    fresh inputs of its own (the same shapes, another seed). ``no_capture``: why the calls must not be captured
    (timed eagerly, the reason said)."""
    rot = rotation(footprint_bytes(inputs, result), device.l2_bytes, device.free_bytes())
    calls = [call, *(another_set(seed + i) for i in range(1, rot.sets))]
    sampler = device.stream_sampler(calls, rot, no_capture)
    capture = getattr(sampler, "capture", "cuda_graph")
    return sampler, StreamFacts(rot, capture, getattr(sampler, "capture_failure", None))


def v4_fields(stream: StreamFacts | None, kernel_busy: tuple[float, int, float | None] | None) -> dict[str, Any]:
    """The v4 keys of a run's timing: how its stream time was taken, and its kernel busy time."""
    if stream is None:
        return {}
    rot = stream.rotation
    fields: dict[str, Any] = {"stream": {
        "capture": stream.capture, "calls_per_replay": rot.calls_per_replay, "rotation_sets": rot.sets,
        "footprint_bytes": rot.footprint_bytes, "l2_bytes": rot.l2_bytes,
        **({"capture_failure": stream.capture_failure[:300]} if stream.capture_failure else {}),
        **({"unrotated_bytes": stream.unrotated_bytes} if stream.unrotated_bytes is not None else {}),
    }}
    if kernel_busy is not None:
        median, samples, span = kernel_busy
        fields["kernel_busy"] = {"median_ns": max(1, round(median)), "samples": samples,
                                 **({"span_median_ns": round(span)} if span is not None else {})}
    return fields
