"""Dropout off for the correctness checks only.

A problem module in training mode (as upstream builds and times it) whose dropout has p > 0 gives a random
output: compared with a float64 execution it fails whatever the implementation (level 2 problem 66, a matmul,
dropout 0.2 and a softmax: relative error 0.236 for eager and ``torch.compile`` alike). Seeding both calls the
same does not give the same mask (the float64 run and a compiled one draw their random numbers differently), so
the checks run with those modules in eval mode — dropout is then the identity — and every other module as it
is (a BatchNorm keeps its batch statistics); the timed call runs them in training mode, as upstream times it.
A compiled implementation is checked as it compiles with dropout off (a second compilation, for the checks);
the graph it times is the training-mode one, which the checks do not see. The verdict says all this.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


def _random_in_training(module: torch.nn.Module) -> str:
    """How ``module`` is random in training mode ('' if it is not): dropout with p > 0, in nn.Dropout and its kind,
    inside nn.MultiheadAttention, between a multi-layer RNN's layers."""
    if isinstance(module, torch.nn.modules.dropout._DropoutNd) and module.p > 0:
        return f"{type(module).__name__}(p={module.p:g})"
    if isinstance(module, torch.nn.MultiheadAttention) and module.dropout > 0:
        return f"MultiheadAttention(dropout={module.dropout:g})"
    if isinstance(module, torch.nn.RNNBase) and module.dropout > 0 and module.num_layers > 1:
        return f"{type(module).__name__}(dropout={module.dropout:g})"
    return ""


@contextmanager
def dropout_off(model: torch.nn.Module, *copies: torch.nn.Module) -> Iterator[str]:
    """``model``'s (and its ``copies``') modules that are random in training mode in eval mode for the block, then
    back as they were; yields the note the verdicts carry ('' where there were none, and nothing changes)."""
    named = sorted({what for m in model.modules() if m.training and (what := _random_in_training(m))})
    targets = [m for root in (model, *copies) for m in root.modules() if m.training and _random_in_training(m)]
    switched = [(m, m.training) for target in targets for m in target.modules()]
    for module, _ in switched:
        module.training = False
    try:
        yield ("checked with dropout off: " + ", ".join(named) + " in eval mode for the checks only (random in "
               "training mode; a compiled implementation is compiled again with dropout off for them); the timed "
               "call runs in training mode, as upstream times it") if named else ""
    finally:
        for module, training in switched:
            module.training = training
