"""Adapters: how the runner calls each implementation, and what it needs installed.

An adapter declares the packages its call needs (pip distribution names); their versions come
from the environment (``importlib.metadata``) and become the pinned install of the implementation
revision. A missing package makes the adapter unavailable with a message, never a crash. Each
adapter declares whether it writes its outputs in place; correctness checks that declaration.

Keys used on the command line: ``baseline`` (the operation's baseline, as the source's benchmark
names it), ``liger`` and ``torch-compile`` (``torch.compile`` of the baseline). Each operation's
adapters live in its module under ``kernelindex.runner.ops``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from kernelindex.runner.definitions import FIRST_COMPILED_CALL, Adapter, Bound, OperationDef, Tensors


def compiled(adapter: Adapter, make: Callable[[], Callable[..., Any]],
             options: dict[str, Any] | None = None) -> Callable[..., Any]:
    """``torch.compile(make(), dynamic=False, options=options)``, compiled once per (case, region) from a
    clean dynamo state: ``start_case`` forgets it, and the first use after that resets dynamo, so no earlier
    case's guards, recompiles or cache limits influence this one. ``options``: Inductor settings of this
    compilation only (a mode's settings, ``max_autotune_gemm_backends``), never the process's."""
    if "compiled" not in adapter.state:
        import torch._dynamo

        torch._dynamo.reset()
        adapter.state["compiled"] = _first_call_timed(adapter, torch.compile(make(), dynamic=False, options=options))
    return adapter.state["compiled"]


def _first_call_timed(adapter: Adapter, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function``, with the wall time of its first call kept in ``adapter.state[FIRST_COMPILED_CALL]``:
    Dynamo, Inductor and, in max-autotune, the autotuning, up to the launch. The checks make that call with
    Inductor's in-process caches cold for the case's shapes; the timed region's first call after the next
    clean dynamo state finds them warm, so only the checks' figure is the compile time. Later calls go
    straight through (one dictionary lookup of host time, never device time)."""
    def call(*args: Any, **kwargs: Any) -> Any:
        if FIRST_COMPILED_CALL in adapter.state:
            return function(*args, **kwargs)
        start = time.perf_counter_ns()
        out = function(*args, **kwargs)
        adapter.state[FIRST_COMPILED_CALL] = time.perf_counter_ns() - start
        return out
    return call


def module_call(module: torch.nn.Module, parameters: dict[str, torch.Tensor], *args: Any) -> Any:
    """Call ``module`` with the given tensors in place of its parameters (``torch.func.functional_call``),
    so autograd links the outputs to those tensors: the gradient of a weight lands on the input."""
    return torch.func.functional_call(module, parameters, args)


OURS = (
    "PyTorch reference baseline, written by KernelIndex from the operation's semantics: the source's "
    "benchmark defines its baseline inside its own script, which is not a package the runner can install."
)


def ours(operation: str, symbol: str, binder: Callable[[Adapter, Tensors], Bound], title: str) -> Adapter:
    """Our plain PyTorch baseline of ``operation`` (``kernelindex.runner.ops``: ``symbol``), named as ours."""
    return Adapter("baseline", operation, f"kernelindex-{operation}", title, "kernelindex-baselines", "python",
                   "kernelindex.runner.ops", symbol, ("torch",), ("torch",), binder, role="baseline",
                   description=OURS)


def select(op: OperationDef, keys: list[str] | None) -> list[Adapter]:
    """The operation's adapters, baseline first; ``keys`` picks some of them by key or by implementation line."""
    known = op.adapters()
    if not keys:
        return known
    by_key = {a.key: a for a in known} | {a.line: a for a in known}  # a run page names the line it recorded
    unknown = [k for k in keys if k not in by_key]
    if unknown:
        raise ValueError(f"unknown implementation {', '.join(unknown)} for {op.slug}; choose from "
                         f"{', '.join(a.key for a in known)} (or their lines: {', '.join(a.line for a in known)})")
    return [by_key[k] for k in keys]
