"""Runner protocol v4 in a problem module's child (``problem_process``): each passed implementation's stream time
(``stream_setup.rotated_sampler``: K calls over R rotating input/output sets, one CUDA graph, replay / K).

- Set 0 is the case's timed draw (``Case.timed_inputs``); set i (1…R−1) is a fresh ``get_inputs()`` under a seed of
  its own (``ROTATION_SEED`` + the case's seed + i, clear of the checks' seeds), moved to the device under the GPU
  lock. The sets are drawn once per case and shared by the implementations (``RotationSets``), as set 0 is.
- The rotation's footprint is the call's inputs and what it returns (``stream_setup.footprint_bytes``).
- The model's parameters, buffers and tensor attributes are its own, not rotated: one model, called as a layer is
  (a compiled implementation is bound to one module; R twin modules would need R compilations). Their bytes are
  recorded as ``unrotated_bytes``: weights that fit the L2 may stay there from one call to the next.
- A call that replaces tensors its model keeps (``problem_module.rebound_state``) is not captured: its K calls run
  eagerly between the two events, the reason said (``capture = "eager"``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kernelindex.runner.problem_checks import to_device
from kernelindex.runner.problem_module import Case, Prepared, rebound_state, state_bytes
from kernelindex.runner.stream_setup import StreamDevice, StreamFacts, rotated_sampler
from kernelindex.runner.timing import Sampler

ROTATION_SEED = 10_000  # set i's seed is this + the case's seed + i; the checks draw under the case's seed + 1000 + n


class RotationSets:
    """The case's further input sets on the device, each drawn once and shared by every implementation."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self.drawn: dict[int, list[Any]] = {}  # seed → the set on the device

    def get(self, seed: int) -> list[Any]:
        if seed not in self.drawn:
            inputs = self.case.inputs(seed)
            with self.case.lock.hold("rotation inputs to the device"):
                self.drawn[seed] = to_device(inputs, self.case.device)
        return self.drawn[seed]

    def release(self) -> None:
        self.drawn.clear()


def _bound(forward: Callable[..., Any], inputs: list[Any]) -> Callable[[], object]:
    return lambda: forward(*inputs)


def stream_samplers(device: StreamDevice, case: Case, passed: dict[str, Prepared],
                    sets: RotationSets) -> tuple[dict[str, Sampler], dict[str, StreamFacts]]:
    """Each passed implementation's stream sampler over the shared sets, and how its stream time is taken."""
    inputs = case.timed_inputs()
    named = {str(i): x for i, x in enumerate(inputs)}
    unrotated = state_bytes(case.model)
    seed = case.seed + ROTATION_SEED
    samplers: dict[str, Sampler] = {}
    facts: dict[str, StreamFacts] = {}
    for key, p in passed.items():
        forward = p.forward
        assert forward is not None  # a passed implementation has its forward

        def another_set(set_seed: int, forward: Callable[..., Any] = forward) -> Callable[[], object]:
            return _bound(forward, sets.get(set_seed))
        no_capture = rebound_state(case.model, p.call)  # runs the call once
        result = p.call()
        samplers[key], found = rotated_sampler(device, p.call, named, result, another_set, seed, no_capture)
        del result
        facts[key] = replace(found, unrotated_bytes=unrotated)
    return samplers, facts

