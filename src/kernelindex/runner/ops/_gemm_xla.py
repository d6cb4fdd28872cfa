"""XLA through JAX for the dense GEMMs (``gemm`` lists it as ``xla-jax``): ``jax.jit(lambda a, b: a @ b.T)``,
compiled ahead of time for the case's shapes when binding (XLA's GEMM autotuning chooses among cuBLAS(Lt)
and its own Triton GEMM fusions then; never in the figure), called on the runner's torch tensors shared
through DLPack (no copy), its answer handed back to torch the same way.

- **Its own process.** The campaign runs this key in a ``campaign.py run`` of its own with
  ``XLA_PYTHON_CLIENT_PREALLOCATE=false``: XLA would otherwise take 75% of the GPU's memory when its
  backend starts, leaving torch (which holds the inputs and the reference) too little. The binder refuses
  to start the backend when that variable says otherwise.
- **Timing.** The runner's protocol v3 reads device time from CUPTI's activity records (the PyTorch
  profiler), which are the process's, not torch's: XLA's kernels are recorded too, and attributed to the
  timed call by the host time of their launch, which falls inside the call's range as long as JAX launches
  before the call returns (it dispatches on the calling thread; the call ends by handing the answer to
  torch). Not yet seen on a GPU: a run whose calls show no attributed activity has a device time near 0,
  under the physical floor, so never eligible; the campaign's summary shows it.
- **Compile time.** The wall time of ``jax.jit(...).lower(a, b).compile()`` (tracing, lowering to
  StableHLO and XLA's compilation, its GEMM autotuning included) is the run's ``compile_ns``, reported by
  the bind that compiled (``Adapter.record_compile``); the first call after it is ``first_call_ns``. The
  runner starts every (case, region) from a clean state, so the timed run's bind always compiles. A bind
  that reuses the executable compiled for the same shapes earlier in the case (the check's trials) reports
  no compile: a run records the compile its own bind did, never an earlier one again and never 0.
"""

from __future__ import annotations

import os
import time
from typing import Any

import torch

from kernelindex.runner.definitions import Adapter, Bound, Tensors

PREALLOCATE = "XLA_PYTHON_CLIENT_PREALLOCATE"
XLA_WORDS = ("XLA through JAX: jax.jit(a @ b.T) compiled ahead of time for the shape (XLA autotunes among cuBLAS "
             "and its Triton GEMM fusions when compiling), called on the inputs shared through DLPack; run in its "
             "own process without XLA's memory preallocation.")
COMPILE_METHOD = ("jax.jit(a @ b.T).lower(a, b).compile() when binding: tracing, lowering and XLA's compilation "
                  "(its GEMM autotuning included), wall time")


class XlaNotReady(RuntimeError):
    """The process would let XLA preallocate most of the GPU's memory."""


def _jax() -> Any:
    if os.environ.setdefault(PREALLOCATE, "false").lower() != "false":
        raise XlaNotReady(f"{PREALLOCATE}={os.environ[PREALLOCATE]!r}: XLA would take most of the GPU's memory "
                          f"from torch; run the xla-jax key in its own process with {PREALLOCATE}=false")
    import jax

    return jax


def _to_jax(jax: Any, t: torch.Tensor) -> Any:
    return jax.dlpack.from_dlpack(t.contiguous())


def bind_xla(adapter: Adapter, x: Tensors) -> Bound:
    jax = _jax()
    a, b = _to_jax(jax, x["a"]), _to_jax(jax, x["b"])
    key = (tuple(a.shape), tuple(b.shape), str(a.dtype), str(a.device))
    if adapter.state.get("xla-key") != key:  # compiled once per shape; compile time stays out of the figure
        started = time.perf_counter_ns()
        adapter.state["xla"] = jax.jit(lambda p, q: p @ q.T).lower(a, b).compile()
        adapter.record_compile(time.perf_counter_ns() - started, COMPILE_METHOD)
        adapter.state["xla-key"] = key
    run = adapter.state["xla"]
    return lambda: {"c": torch.from_dlpack(run(a, b))}


def xla_adapter(slug: str) -> Adapter:
    return Adapter("xla-jax", slug, "jax-xla-gemm", "XLA through JAX (jax.jit a @ b.T)", "jax", "python", "jax",
                   "jit(lambda a, b: a @ b.T)", ("jax", "jaxlib"), (), bind_xla, description=XLA_WORDS)
