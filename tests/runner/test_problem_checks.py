"""The problem checks' memory and lock discipline, on the CPU: each draw's float64 reference is computed once
for every implementation and freed before the next draw's; a GPU reference (a stand-in on the CPU) stays where
it was computed and the checks follow in its hold; one implementation's failure or in-place change of its
inputs does not touch the others'; the comparison a chunk at a time is the comparison."""

from __future__ import annotations

import gc
import hashlib
import weakref
from typing import Any

import pytest
import torch

from kernelindex.runner import problem_checks
from kernelindex.runner.problem_checks import FP64_TOLERANCE, _error, check, check_all
from kernelindex.runner.problem_module import Case, load_problem

SCALED = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)

    def forward(self, x):
        return torch.tanh(self.linear(x)) * 3

def get_inputs():
    return [torch.randn(6, 8)]

def get_init_inputs():
    return [8]
'''


def _case(**kwargs: Any) -> Case:
    digest = "sha256:" + hashlib.sha256(SCALED.encode()).hexdigest()
    return Case(load_problem(SCALED, digest), "cpu", **kwargs)


def _spy_references(monkeypatch: pytest.MonkeyPatch, events: list[Any], gpu: bool = False) -> None:
    """Record each float64 execution (and the device asked); ``gpu``: a "cuda" one runs on the CPU instead, a
    stand-in for the GPU on a host without one."""
    real = problem_checks._float64

    def spied(case: Any, inputs: list[Any], device: str, model64: Any) -> list[torch.Tensor]:
        events.append(("reference", device))
        return real(case, inputs, "cpu" if gpu and device == "cuda" else device, model64)

    monkeypatch.setattr(problem_checks, "_float64", spied)
    if gpu:
        monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
        monkeypatch.setattr(torch.cuda, "empty_cache", lambda *a, **k: None)


def _called(case: Case, key: str, events: list[Any]) -> Any:
    def call(xs: list[Any]) -> Any:
        events.append(("call", key))
        return case.model(*xs)
    return call


def test_each_draw_has_one_reference_for_every_implementation(monkeypatch: pytest.MonkeyPatch) -> None:
    case, events = _case(), []
    _spy_references(monkeypatch, events)
    verdicts = check_all(case, {"a": _called(case, "a", events), "b": _called(case, "b", events)})
    assert [v.status for v in verdicts.values()] == ["passed", "passed"]
    assert events == [("reference", "cpu"), ("call", "a"), ("call", "b")] * 2  # not a reference per implementation
    assert all(v.checks == 2 and v.reference == "float64 on the CPU" for v in verdicts.values())


def test_a_reference_is_freed_before_the_next_draw_and_after_the_last(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never two references alive at once, none kept after the checks (at level 1's sizes one float64
    reference is 12.9 GB; they were kept for every implementation, on the host)."""
    alive: list[weakref.ref[torch.Tensor]] = []
    real = problem_checks._float64

    def spied(case: Any, inputs: list[Any], device: str, model64: Any) -> list[torch.Tensor]:
        gc.collect()
        assert not [r for r in alive if r() is not None], "an earlier draw's reference is still alive"
        out = real(case, inputs, device, model64)
        alive.extend(weakref.ref(t) for t in out)
        return out

    monkeypatch.setattr(problem_checks, "_float64", spied)
    case = _case()
    assert check(case, lambda xs: case.model(*xs), checks=3).status == "passed"
    gc.collect()
    assert len(alive) == 3 and all(r() is None for r in alive)


def test_a_gpu_reference_is_never_moved_and_the_checks_follow_in_its_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    case, events = _case(reference_device="cuda"), []
    _spy_references(monkeypatch, events, gpu=True)
    moved: list[str] = []
    monkeypatch.setattr(problem_checks, "_cpu_reference", lambda *a: moved.append("cpu") or ([], ""))
    verdicts = check_all(case, {"a": _called(case, "a", events), "b": _called(case, "b", events)})
    assert moved == [] and [e for e in events if e[0] == "reference"] == [("reference", "cuda")] * 2
    assert all(v.status == "passed" and v.reference == "float64 on the GPU" for v in verdicts.values())
    holds = case.lock.holds[1:]  # after "model to the device"
    assert [h[0] for h in holds] == ["float64 reference on the GPU", "correctness check", "correctness check"] * 2
    for draw in (holds[:3], holds[3:]):  # one hold of the lock per draw, a phase each, nothing let go between
        assert all(later[1] == later[2] == earlier[3] for earlier, later in zip(draw, draw[1:], strict=False))


def test_a_gpu_reference_that_does_not_fit_is_made_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    real = problem_checks._float64

    def out_of_memory(case: Any, inputs: list[Any], device: str, model64: Any) -> list[torch.Tensor]:
        if device == "cuda":
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 12.00 GiB")
        return real(case, inputs, device, model64)

    monkeypatch.setattr(problem_checks, "_float64", out_of_memory)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda *a, **k: None)
    case = _case(reference_device="cuda")
    verdict = check(case, lambda xs: case.model(*xs))
    assert verdict.status == "passed" and verdict.reference == "float64 on the CPU"
    assert [h[0] for h in case.lock.holds[1:]] == ["float64 reference on the GPU", "correctness check"] * 2


def test_one_implementations_failure_or_changed_inputs_leave_the_others_checked() -> None:
    case = _case()

    def broken(xs: list[Any]) -> Any:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    def scribbles(xs: list[Any]) -> Any:
        out = case.model(*xs)
        xs[0].fill_(7.0)  # right output, but it changes its inputs in place
        return out

    verdicts = check_all(case, {"broken": broken, "scribbles": scribbles, "eager": lambda xs: case.model(*xs)})
    assert verdicts["broken"].status == "runtime_error" and verdicts["broken"].checks == 0
    assert "illegal memory access" in verdicts["broken"].detail
    assert verdicts["scribbles"].status == verdicts["eager"].status == "passed"
    assert verdicts["eager"].checks == 2 and verdicts["eager"].tolerance == FP64_TOLERANCE


def test_the_comparison_a_chunk_at_a_time_is_the_whole_comparison(monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(3)
    want = torch.randn(5, 13, dtype=torch.float64)
    got = (want + 1e-3 * torch.randn(5, 13, dtype=torch.float64)).float().t().contiguous().t()  # not contiguous
    whole = float(torch.linalg.vector_norm(got.double() - want) / torch.linalg.vector_norm(want))
    monkeypatch.setattr(problem_checks, "COMPARE_CHUNK", 7)
    error, why, note = _error([got], [want])
    assert why == note == "" and error == pytest.approx(whole, rel=1e-12)
    late = got.clone()
    late[4, 12] = float("nan")  # in the last chunk
    assert _error([late], [want]) == (float("inf"), "NaN or Inf in the output", "")
    assert _error([got * 1e-4], [want])[1] == "the output is (nearly) zero where the reference is not"


FLOAT32_ONLY = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.mm(x, torch.eye(4))  # a float32 constant: float64 inputs cannot run

def get_inputs():
    return [torch.randn(3, 4)]

def get_init_inputs():
    return []
'''


def test_a_module_that_cannot_run_in_float64_is_checked_against_float32_and_says_so() -> None:
    case = Case(load_problem(FLOAT32_ONLY, "sha256:" + hashlib.sha256(FLOAT32_ONLY.encode()).hexdigest()), "cpu")
    verdict = check(case, lambda xs: case.model(*xs))
    assert verdict.status == "passed" and verdict.tolerance == problem_checks.FP32_REFERENCE_TOLERANCE
    assert verdict.reference.startswith("float32 on the CPU (the module cannot run in float64: RuntimeError")


CLOSURE = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.mlp = nn.ModuleDict(dict(up=nn.Linear(features, 2 * features), down=nn.Linear(2 * features, features),
                                      dropout=nn.Dropout(0.5)))
        m = self.mlp
        self.mlpf = lambda x: m.dropout(m.down(torch.relu(m.up(x))))  # as minGPT's block (KernelBench 3/44)

    def forward(self, x):
        return x + self.mlpf(x)

def get_inputs():
    return [torch.randn(5, 8)]

def get_init_inputs():
    return [8]
'''


def _closure_case() -> Case:
    return Case(load_problem(CLOSURE, "sha256:" + hashlib.sha256(CLOSURE.encode()).hexdigest()), "cpu")


def test_a_model_calling_a_closure_over_its_submodules_gets_its_float64_reference() -> None:
    """A deepcopy of such a model would call the original's float32 submodules (on the GPU, on a GPU run:
    3/44 failed with 'mat1 is on cpu'); its twin calls its own."""
    case = _closure_case()
    verdict = check(case, lambda xs: case.model(*xs))
    assert verdict.status == "passed", verdict.detail
    assert verdict.reference == "float64 on the CPU" and verdict.tolerance == FP64_TOLERANCE
    assert "dropout off" in verdict.detail  # the twin made inside the checks has the reference's modes


def test_a_twin_equals_the_model_in_its_own_modules_and_leaves_the_random_state_alone() -> None:
    case = _closure_case()
    with torch.no_grad():
        case.model.mlp["up"].weight.add_(1.0)  # a twin copies the model it is given, not a fresh draw
    case.model.eval()
    state = torch.random.get_rng_state()
    twin = case.twin(case.model)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert all(torch.equal(a, b) and a.data_ptr() != b.data_ptr()
               for a, b in zip(twin.state_dict().values(), case.model.state_dict().values(), strict=True))
    assert not any(m.training for m in twin.modules())
    twin.to(torch.float64)
    assert case.model.mlp["up"].weight.dtype == torch.float32
    assert twin(torch.randn(2, 8, dtype=torch.float64)).dtype == torch.float64  # its closure calls its own mlp
    reference = case.twin()  # the reference model: as built, before the change above
    assert not torch.equal(reference.mlp["up"].weight, case.model.mlp["up"].weight)
