"""XLA through JAX for the dense GEMMs (runner/ops/_gemm_xla.py): it refuses a process where XLA would
preallocate the GPU's memory, and (where jax is installed: the H200 image has it; CI does not) passes the
runner's check on the CPU through DLPack, compiled once per shape. Its ahead-of-time compile is the run's
``compile_ns`` (a fake jax whose compile sleeps a known time stands in for XLA on machines without jax)."""

from __future__ import annotations

import time
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from op_cases import case, op  # noqa: E402
from runner_fakes import FakeDevice  # noqa: E402

from kernelindex import registry  # noqa: E402
from kernelindex.domain.manifests import build  # noqa: E402
from kernelindex.readmodel.samples import AHEAD_OF_TIME_COMPILE, run_secondary  # noqa: E402
from kernelindex.runner.campaign import outcome_rows, verify_operation  # noqa: E402
from kernelindex.runner.correctness import check  # noqa: E402
from kernelindex.runner.ops import _gemm_xla  # noqa: E402
from kernelindex.runner.ops._gemm_xla import PREALLOCATE, XlaNotReady, bind_xla  # noqa: E402
from kernelindex.runner.timing import TimingPolicy  # noqa: E402

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


COMPILE_S = 0.05  # the fake compile's sleep: the recorded compile is at least this


class FakeJax:
    """jax.jit(f).lower(a, b).compile() that sleeps COMPILE_S and counts its compiles; its executable calls f
    on the torch tensors (DLPack sharing is the identity) and moves a fake device clock, if given one."""

    def __init__(self, device: FakeDevice | None = None) -> None:
        self.compiles = 0
        self.device = device
        self.dlpack = SimpleNamespace(from_dlpack=lambda t: t)

    def jit(self, fn: Any) -> Any:
        return SimpleNamespace(lower=lambda a, b: SimpleNamespace(compile=lambda: self._compile(fn)))

    def _compile(self, fn: Any) -> Any:
        time.sleep(COMPILE_S)
        self.compiles += 1

        def run(a: Any, b: Any) -> Any:
            if self.device is not None:
                self.device.clock.advance(40_000)
            return fn(a, b)
        return run


def _gemm_inputs(m: int = 16) -> dict[str, Any]:
    return {"a": torch.randn(m, 2048, dtype=torch.float16), "b": torch.randn(128, 2048, dtype=torch.float16)}


def test_the_bind_that_compiles_reports_the_compile_and_a_reuse_reports_none(monkeypatch: pytest.MonkeyPatch) -> None:
    jax = FakeJax()
    monkeypatch.setattr(_gemm_xla, "_jax", lambda: jax)
    adapter = _adapter()
    adapter.bind(_gemm_inputs())
    compiled = adapter.bind_compile()
    assert compiled is not None and compiled.ns >= COMPILE_S * 1e9
    assert "lower(a, b).compile()" in compiled.method
    adapter.bind(_gemm_inputs())  # same shapes: the executable is reused, so no compile is reported again
    assert jax.compiles == 1 and adapter.bind_compile() is None
    adapter.bind(_gemm_inputs(m=32))  # a new shape compiles again and reports that compile
    again = adapter.bind_compile()
    assert jax.compiles == 2 and again is not None and again.ns >= COMPILE_S * 1e9


def test_an_xla_run_records_its_compile_as_compile_ns_and_shows_it(monkeypatch: pytest.MonkeyPatch) -> None:
    device = FakeDevice()
    jax = FakeJax(device)
    monkeypatch.setattr(_gemm_xla, "_jax", lambda: jax)
    xla = next(a for a in op(SLUG).adapters() if a.key == "xla-jax")
    adapter = replace(xla, packages=("torch",), modules=())  # its revision names jax's version: not installed here
    policy = TimingPolicy(warmup_calls=2, warmup_time_ns=10_000, min_samples=100, target_rse=0.01,
                          time_budget_ns=100_000_000, host_calls=5)
    environment = build("ExecutionEnvironment", {"hardware": {"vendor": "NVIDIA", "product": "Fake GPU"}})
    runner = {"name": "test", "key_id": "sha256:" + "0" * 64}
    result = verify_operation(registry.load_operation(SLUG), [case(SLUG, {"m": 16, "n": 128, "k": 2048}, "")], None,
                              device=device, environment=environment, runner=runner, policy=policy,
                              calls_per_sample=10, campaign="test", adapters=[adapter])
    [outcome] = result.cases[0].impls
    assert outcome.status == "passed", outcome.error
    assert jax.compiles == 2  # the check's bind, then the timed region's bind from a clean state
    timing = outcome.run.spec.timing
    assert timing.secondary["compile_ns"] >= COMPILE_S * 1e9  # the timed bind's own compile, wall time
    assert timing.secondary["first_call_ns"] == 40_000  # the first call after the compile, on the device clock
    assert "lower(a, b).compile()" in timing.raw["compile_method"]
    assert outcome_rows(result)[0]["compile_ns"] == timing.secondary["compile_ns"]
    shown = {f["key"]: f for f in run_secondary(timing.model_dump(mode="json"))}
    assert shown["compile_ns"]["name"] == AHEAD_OF_TIME_COMPILE
    assert "lower(a, b).compile()" in shown["compile_ns"]["note"] and "excluded" in shown["compile_ns"]["note"]
