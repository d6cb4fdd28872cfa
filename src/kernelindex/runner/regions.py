"""The timed regions: what one timed call of an implementation runs.

- ``forward``: the implementation's call. Inputs in ``grad_inputs`` require grad and autograd
  records the call, as the Liger benchmarks time a forward (what a training step runs).
- ``backward``: autograd's gradients of ``grad_inputs`` from one forward output computed before
  timing, for the upstream gradient ``upstream_gradients`` gives: 1.0 where the output is one number
  (a loss: what ``loss.backward()`` sends in training, and Liger's losses skip their scaling for it),
  a fixed random tensor otherwise (``torch.autograd.grad`` with ``retain_graph``, so every timed call
  runs the same backward; gradients are returned, never accumulated into ``.grad``). The forward is
  not timed.
- ``forward+backward``: the call and those gradients, in one timed call.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch._functorch.config

from kernelindex.runner.correctness import gradients, upstream_gradients
from kernelindex.runner.definitions import REGIONS, Bound, Tensors

GRADIENT_REGIONS = ("backward", "forward+backward")
TIMING_UPSTREAM_SEED = 2_000_003

Call = Callable[[], object]


def needs_gradients(regions: tuple[str, ...] | list[str]) -> bool:
    return any(r in GRADIENT_REGIONS for r in regions)


def prepare_inputs(inputs: Tensors, grad_inputs: tuple[str, ...]) -> Tensors:
    """Make the gradient inputs leaves that require grad (done for every region: the forward of an
    operation with gradients is timed with autograd recording)."""
    for name in grad_inputs:
        inputs[name].requires_grad_(True)
    return inputs


def region_call(region: str, bound: Bound, inputs: Tensors, grad_inputs: tuple[str, ...]) -> Call:
    """The zero-argument call that one timed sample runs for ``region``."""
    if region == "forward":
        if not grad_inputs:
            def forward_no_grad() -> object:
                with torch.no_grad():
                    return bound()
            return forward_no_grad

        def forward() -> object:
            with torch.enable_grad():
                return bound()
        return forward
    if region not in GRADIENT_REGIONS:
        raise ValueError(f"unknown timed region {region!r}; one of {', '.join(REGIONS)}")
    if not grad_inputs:
        raise ValueError(f"region {region} needs an operation with gradient inputs")
    wrt = {n: inputs[n] for n in grad_inputs}
    if region == "backward":
        # The same backward runs again and again (retain_graph). torch.compile donates saved
        # buffers to its backward by default, which forbids that, so the forward this region starts
        # from is compiled without donated buffers (a memory-reuse setting; the runs say so).
        with torch.enable_grad(), torch._functorch.config.patch(donated_buffer=False):
            outputs = bound()
        upstream = upstream_gradients(outputs, list(outputs), TIMING_UPSTREAM_SEED)
        return lambda: gradients(outputs, upstream, wrt, retain=True)
    with torch.enable_grad():  # one untimed forward gives the upstream gradients' shapes and dtypes
        first = bound()
    upstream = upstream_gradients(first, list(first), TIMING_UPSTREAM_SEED)
    first = {}  # keep no forward graph alive: every timed call builds its own

    def forward_backward() -> object:
        with torch.enable_grad():
            return gradients(bound(), upstream, wrt)
    return forward_backward
