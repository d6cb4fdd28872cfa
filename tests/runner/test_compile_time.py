"""A torch.compile run's compile time is the checks' first call (runner/adapters.py ``compiled``): the checks
compile the case first, so the timed region's first call after a clean dynamo state finds Inductor's caches
warm and is recorded as ``first_call_ns``, never as the compile time. Runs recorded before that show their
``compile_ns`` as a warm recompile (readmodel/samples.py). A fake ``torch.compile`` whose first compilation in
the process is slow and whose later ones are quick, as Inductor's in-process caches make them, stands in."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from op_cases import op, verified_alone  # noqa: E402
from runner_fakes import FakeDevice  # noqa: E402

from kernelindex.readmodel.samples import (  # noqa: E402
    CHECKS_COMPILE_NOTE,
    WARM_FIRST_CALL_NOTE,
    WARM_RECOMPILE,
    run_secondary,
)
from kernelindex.runner.compile_time import CHECKS_COMPILE  # noqa: E402

SLUG = "gemm-n128-k2048"
COLD_S = 0.2  # the first compilation's "autotuning"


class FakeCompile:
    """torch.compile(fn) whose compiled function's first call sleeps COLD_S the first time any is called in
    the process (cold caches) and not at all after that (warm)."""

    def __init__(self, device: FakeDevice) -> None:
        self.compiles = 0
        self.warm = False
        self.device = device

    def __call__(self, fn: Callable[..., Any], **_: Any) -> Callable[..., Any]:
        self.compiles += 1
        first = [True]

        def run(*args: Any, **kwargs: Any) -> Any:
            if first[0] and not self.warm:
                time.sleep(COLD_S)
                self.warm = True
            first[0] = False
            self.device.clock.advance(40_000)  # the kernel's device time
            return fn(*args, **kwargs)
        return run


def _verified(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, FakeCompile]:
    device = FakeDevice()
    fake = FakeCompile(device)
    monkeypatch.setattr(torch, "compile", fake)
    autotune = next(a for a in op(SLUG).adapters() if a.key == "torch-compile-max-autotune")
    adapter = replace(autotune, packages=("torch",), modules=())
    outcome = verified_alone(SLUG, {"m": 16, "n": 128, "k": 2048}, adapter, device)
    return outcome.run.spec.timing, fake


def test_the_compile_time_is_the_checks_first_call_not_the_warm_recompile(monkeypatch: pytest.MonkeyPatch) -> None:
    timing, fake = _verified(monkeypatch)
    assert fake.compiles == 2  # the checks' compilation, then the timed region's from a clean dynamo state
    assert timing.secondary["compile_ns"] >= COLD_S * 1e9  # the cold one, paid in the checks
    assert timing.secondary["first_call_ns"] == 40_000  # the region's first call (device clock): caches warm
    assert timing.raw["compile_measured"] == CHECKS_COMPILE
    shown = {f["key"]: f for f in run_secondary(timing.model_dump(mode="json"), checked_before_timing=True)}
    assert shown["compile_ns"]["name"] == "torch.compile time" and shown["compile_ns"]["note"] == CHECKS_COMPILE_NOTE
    assert shown["first_call_ns"]["note"] == WARM_FIRST_CALL_NOTE


def test_an_earlier_runs_compile_time_is_shown_as_the_warm_recompile_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    timing, _ = _verified(monkeypatch)
    earlier = timing.model_dump(mode="json")  # as runs recorded it before 2026-12-03: the region's first call
    earlier["secondary"] = {"compile_ns": earlier["secondary"]["first_call_ns"]}
    del earlier["raw"]["compile_measured"]
    shown = {f["key"]: f for f in run_secondary(earlier, checked_before_timing=True)}
    assert shown["compile_ns"]["name"] == WARM_RECOMPILE and "understates" in shown["compile_ns"]["note"]
    problem_module = {f["key"]: f for f in run_secondary(earlier, checked_before_timing=False)}
    assert problem_module["compile_ns"]["name"] == "torch.compile time"  # its first call is the compilation
