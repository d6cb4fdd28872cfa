"""Dense GEMM: FlashInfer-Bench's ``gemm-n{N}-k{K}`` definitions, C = A·Bᵀ with A [M, K], B [N, K], fp16.

The operations are the registry's copies of the imported definitions (``registry/operations/gemm-n*``,
the same digests), so these runs land on the imported workloads. Implementations the H200 machine has:

- ``baseline``: ``torch.matmul(a, b.T)``, PyTorch's GEMM, which runs cuBLAS(Lt) on CUDA (the cuBLAS
  shipped with torch; its version is torch's CUDA build, recorded in the environment);
- ``torch-compile-max-autotune``: ``torch.compile`` of that function with the settings of
  ``mode="max-autotune-no-cudagraphs"``: Inductor times its Triton GEMM templates against ATen's (cuBLAS)
  and keeps the fastest, so the row may be cuBLAS again — what a user of that mode gets;
- ``torch-compile-triton``: the same with ``max_autotune_gemm_backends="TRITON"``: only Triton templates,
  so the row is a Triton kernel;
- ``xla-jax``: XLA through JAX, in its own process without memory preallocation (``_gemm_xla``).

Autotuning costs seconds to tens of seconds per shape: the first call after a clean dynamo state is
recorded as ``compile_ns``, never in the figure; ``xla-jax`` records its ahead-of-time lowering + compile
(wall time) as ``compile_ns`` instead (``_gemm_xla``). Inputs: A ~ N(0, 1), B ~ N(0, 1/K), so C ~ N(0, 1) stays
well inside fp16's range. The reference is A·Bᵀ in float64 on the inputs' device.
"""

from __future__ import annotations

from typing import Any

import torch

from kernelindex import registry
from kernelindex.domain.manifests import WorkloadCase
from kernelindex.runner.definitions import Adapter, Bound, OperationDef, Tensors
from kernelindex.runner.ops._common import compiled, place, randn, shape
from kernelindex.runner.ops._gemm_xla import xla_adapter

MODULE = "kernelindex.runner.ops.gemm"
MAX_AUTOTUNE = "max-autotune-no-cudagraphs"
BASELINE_WORDS = ("torch.matmul(a, b.T): PyTorch's GEMM, which calls cuBLAS (cuBLASLt) for fp16 on CUDA; "
                  "cuBLAS is the one shipped with torch.")
AUTOTUNE_WORDS = ("torch.compile with the settings of mode='max-autotune-no-cudagraphs': Inductor times its Triton "
                  "GEMM templates against ATen's cuBLAS call and keeps the fastest, so the kernel may be either.")
TRITON_WORDS = ("torch.compile with the settings of mode='max-autotune-no-cudagraphs' and max_autotune_gemm_backends="
                "'TRITON': Inductor's Triton GEMM templates only, autotuned per shape.")


def gemm_slugs() -> list[str]:
    """The dense GEMM definitions the runner measures: every ``gemm`` operation of the registry."""
    return sorted(slug for slug, spec in registry.operations().items() if spec.spec.family == "gemm")


def _inputs(workload: WorkloadCase, gen: torch.Generator, device: torch.device) -> Tensors:
    k = shape(workload, "a")[1]
    values = {"a": randn(workload, "a", gen, device), "b": randn(workload, "b", gen, device, scale=k**-0.5)}
    return place(values, workload, device)


def gemm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """C = A·Bᵀ."""
    return torch.matmul(a, b.T)


def reference(x: Tensors) -> Tensors:
    return {"c": gemm(x["a"].double(), x["b"].double())}


def autotune_options(triton_only: bool) -> dict[str, Any]:
    """Inductor's settings for ``mode="max-autotune-no-cudagraphs"`` (plus Triton-only GEMMs), passed to
    this compilation alone."""
    from torch._inductor import list_mode_options

    options = dict(list_mode_options(MAX_AUTOTUNE))
    return {**options, "max_autotune_gemm_backends": "TRITON"} if triton_only else options


def _bind_matmul(adapter: Adapter, x: Tensors) -> Bound:
    a, b = x["a"], x["b"]
    return lambda: {"c": gemm(a, b)}


def _binder(triton_only: bool) -> Any:
    def bind(adapter: Adapter, x: Tensors) -> Bound:
        a, b = x["a"], x["b"]
        call = compiled(adapter, lambda: gemm, autotune_options(triton_only))
        return lambda: {"c": call(a, b)}
    return bind


def _adapters(slug: str) -> list[Adapter]:
    symbol = f"{MODULE}.gemm"
    return [
        Adapter("baseline", slug, "torch-matmul-cublas", "torch.matmul (cuBLAS)", "pytorch", "cuda", "torch",
                "matmul", ("torch",), ("torch",), _bind_matmul, role="baseline", description=BASELINE_WORDS),
        Adapter("torch-compile-max-autotune", slug, "torch-compile-max-autotune-gemm",
                "torch.compile max-autotune-no-cudagraphs (cuBLAS or Triton, fastest)", "pytorch", "python", "torch",
                f"compile({symbol}, {MAX_AUTOTUNE})", ("torch", "triton"), ("torch._inductor",), _binder(False),
                description=AUTOTUNE_WORDS),
        Adapter("torch-compile-triton", slug, "torch-compile-triton-gemm",
                "Triton GEMM templates (torch.compile max-autotune, Triton only)", "pytorch", "triton", "torch",
                f"compile({symbol}, {MAX_AUTOTUNE}, gemm backends TRITON)", ("torch", "triton"),
                ("torch._inductor",), _binder(True), description=TRITON_WORDS),
        xla_adapter(slug),
    ]


def _operation(slug: str) -> OperationDef:
    return OperationDef(slug, _inputs, reference, lambda: _adapters(slug))


OPERATIONS = [_operation(slug) for slug in gemm_slugs()]
