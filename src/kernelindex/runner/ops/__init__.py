"""Operations the runner can verify, one ``OperationDef`` each.

Every module in this package defines ``OPERATIONS: list[OperationDef]``; ``operations()`` discovers
them, so adding an operation means adding a module (no central list to edit). An operation's
definition holds what the runner needs to check and time it:

- ``make_inputs``: a fresh random input set (never zeros) with the workload case's exact shapes,
  dtypes and strides, from the given generator, on the given device;
- ``reference``: the operation's semantics in plain PyTorch evaluated in float64 on those inputs,
  differentiable (autograd through it gives the reference gradients);
- ``adapters``: the implementations (baseline first, then ``liger``, then ``torch-compile`` of the
  baseline); each binder returns the outputs by name and keeps them differentiable with respect to
  the inputs in ``grad_inputs`` when those require grad (call autograd functions with the input
  tensors; never a module holding its own copy of a parameter);
- ``grad_inputs``: the inputs (parameters included) whose gradients a backward region produces;
- ``regions``: the timed regions the runner can measure for it (``forward``, ``backward``,
  ``forward+backward``);
- ``unavailable``: why the operation cannot be verified on the runner, when it cannot (listed on
  /challenges with that sentence);
- ``overwrites``: inputs an implementation declared in place may overwrite although no output aliases
  them (the spec's constraint: Liger's cross-entropy writes the logits' gradient into the logits);
- ``optional_inputs``: inputs outside the spec's list that only some cases carry (dyt's per-channel
  ``beta`` when the case's ``params.beta`` is true, as its spec says); one of them in ``grad_inputs``
  is differentiated and checked only where the case carries it (``grads_of``).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import replace

from kernelindex.runner.definitions import OperationDef


def operations() -> dict[str, OperationDef]:
    """Every operation the runner knows, by catalog slug (discovered from this package's modules).
    An operation listed in the registry's ``runner_coverage.yaml`` carries that reason as
    ``unavailable`` (the sentence /challenges shows)."""
    from kernelindex import registry

    listed = registry.runner_unavailable()
    found: dict[str, OperationDef] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for op in getattr(module, "OPERATIONS", []):
            if op.slug in found:
                raise ValueError(f"operation {op.slug!r} is defined twice (in {info.name} and before)")
            if op.unavailable is None and op.slug in listed:
                op = replace(op, unavailable=listed[op.slug])
            found[op.slug] = op
    return found
