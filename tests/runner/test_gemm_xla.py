"""XLA through JAX for the dense GEMMs (runner/ops/_gemm_xla.py): it refuses a process where XLA would
preallocate the GPU's memory, and (where jax is installed: the H200 image has it; CI does not) passes the
runner's check on the CPU through DLPack, compiled once per shape."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from op_cases import case, op  # noqa: E402

from kernelindex import registry  # noqa: E402
from kernelindex.runner.correctness import check  # noqa: E402
from kernelindex.runner.ops._gemm_xla import PREALLOCATE, XlaNotReady, bind_xla  # noqa: E402

SLUG = "gemm-n128-k2048"


def _adapter():  # noqa: ANN202
    adapter = next(a for a in op(SLUG).adapters() if a.key == "xla-jax")
    adapter.start_case()
    return adapter


def test_refuses_to_let_xla_preallocate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PREALLOCATE, "true")
    x = {"a": torch.randn(4, 2048, dtype=torch.float16), "b": torch.randn(128, 2048, dtype=torch.float16)}
    with pytest.raises(XlaNotReady, match="own process"):
        bind_xla(_adapter(), x)


def test_xla_gemm_passes_the_runners_check_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("jax")
    monkeypatch.setenv(PREALLOCATE, "false")
    adapter = _adapter()
    workload = case(SLUG, {"m": 16, "n": 128, "k": 2048}, "")
    result = check(registry.load_operation(SLUG), workload, op(SLUG), lambda x: bind_xla(adapter, x),
                   in_place=False, device="cpu", trials=2)
    assert result.passed, result.detail
    compiled = adapter.state["xla"]
    x = {"a": torch.randn(16, 2048, dtype=torch.float16), "b": torch.randn(128, 2048, dtype=torch.float16)}
    bind_xla(adapter, x)
    assert adapter.state["xla"] is compiled  # same shapes: not compiled again
