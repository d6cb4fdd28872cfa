"""The generic problem-module adapter on CPU: a correct problem passes against its float64
execution and is timed through the runner's timing interface; a problem whose float32 output is
wrong is incorrect_numerical and never timed; the file must be the digest asked for; the process
has no network and a time limit; torch.rand_mix exists for the older problem sets."""

from __future__ import annotations

import hashlib

import pytest
import torch

from kernelindex.runner.problem_checks import FP64_TOLERANCE, check
from kernelindex.runner.problem_module import (
    Case,
    ProblemLoadError,
    install_rand_mix,
    load_problem,
    prepare,
    rebound_state,
)
from kernelindex.runner.problem_process import last_words, run_isolated

CORRECT = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)

    def forward(self, x):
        return torch.relu(self.linear(x)) * 2

batch_size = 8
features = 16

def get_inputs():
    return [torch.rand_mix(batch_size, features)]

def get_init_inputs():
    return [features]
'''
# A kernel that is right in float64 and wrong in float32: the reference cannot see the bug by itself.
WRONG = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x * (2.0 if x.dtype == torch.float64 else 2.01)

def get_inputs():
    return [torch.randn(64)]

def get_init_inputs():
    return []
'''
NETWORK = '''import socket
import torch
import torch.nn as nn

socket.create_connection(("127.0.0.1", 9))

class Model(nn.Module):
    def forward(self, x):
        return x

def get_inputs():
    return [torch.randn(4)]

def get_init_inputs():
    return []
'''
SLOW = '''import time
import torch
import torch.nn as nn

time.sleep(60)

class Model(nn.Module):
    def forward(self, x):
        return x

def get_inputs():
    return [torch.randn(4)]

def get_init_inputs():
    return []
'''


def _digest(source: str) -> str:
    return "sha256:" + hashlib.sha256(source.encode()).hexdigest()


def test_correct_problem_passes_against_float64() -> None:
    case = Case(load_problem(CORRECT, _digest(CORRECT)), "cpu")
    verdict = check(case, lambda xs: case.model(*xs))
    assert verdict.status == "passed", verdict.detail
    assert verdict.reference == "float64 on the CPU" and verdict.tolerance == FP64_TOLERANCE
    assert verdict.checks == 2 and verdict.relative_error is not None and verdict.relative_error < 1e-6


def test_wrong_output_is_incorrect_numerical() -> None:
    case = Case(load_problem(WRONG, _digest(WRONG)), "cpu")
    prepared = prepare(case, "eager")
    assert prepared.verdict.status == "incorrect_numerical"
    assert "over the tolerance" in prepared.verdict.detail


def test_the_file_must_be_the_digest_asked_for() -> None:
    with pytest.raises(ProblemLoadError, match="not the problem asked for"):
        load_problem(CORRECT, _digest(WRONG))


def test_rand_mix_draws_the_shape_asked() -> None:
    install_rand_mix()
    torch.manual_seed(0)
    assert torch.rand_mix(3, 5).shape == (3, 5)  # type: ignore[attr-defined]
    assert torch.rand_mix_like(torch.zeros(2, 2)).shape == (2, 2)  # type: ignore[attr-defined]


def test_isolated_process_times_passed_implementations_only() -> None:
    request = {"source": CORRECT, "digest": _digest(CORRECT), "device": "cpu", "product": "CPU test",
               "implementations": ["eager"], "policy": {"min_samples": 20, "max_samples": 20,
                                                         "warmup_calls": 1, "warmup_time_ns": 0}}
    result = run_isolated(request, time_limit_s=120)
    assert result["status"] == "done", result
    eager = result["implementations"]["eager"]
    assert eager["verdict"]["status"] == "passed" and eager["timing"]["samples"] >= 20
    assert {"build", "prepare eager", "references", "timing"} <= set(result["phases_s"])  # where the time went
    assert result["backend_flags"]["torch.backends.cudnn.allow_tf32"] == "True"  # PyTorch's default, recorded
    wrong = run_isolated({**request, "source": WRONG, "digest": _digest(WRONG)}, time_limit_s=120)
    assert wrong["implementations"]["eager"]["verdict"]["status"] == "incorrect_numerical"
    assert "timing" not in wrong["implementations"]["eager"]


def test_isolated_process_has_no_network_and_a_time_limit() -> None:
    request = {"source": NETWORK, "digest": _digest(NETWORK), "device": "cpu", "implementations": ["eager"]}
    refused = run_isolated(request, time_limit_s=120)
    assert refused["status"] == "runtime_error" and "network disabled" in refused["detail"]
    slow = run_isolated({**request, "source": SLOW, "digest": _digest(SLOW)}, time_limit_s=5)
    assert slow["status"] == "timeout"


DIES = '''import os, sys
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x

def get_inputs():
    sys.stderr.write("""Index.cu:92: block: [3,0,0], thread: [0,0,0] Assertion `idx >= 0 && idx < size` failed.
Traceback (most recent call last):
  File "problem.py", line 9, in get_inputs
torch.AcceleratorError: CUDA error: device-side assert triggered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.
""")
    sys.stderr.flush()
    os._exit(1)

def get_init_inputs():
    return []
'''


def test_a_dead_process_is_reported_by_the_error_it_names_not_its_last_line_of_advice() -> None:
    request = {"source": DIES, "digest": _digest(DIES), "device": "cpu", "implementations": ["eager"]}
    died = run_isolated(request, time_limit_s=120)
    assert died["status"] == "runtime_error"
    assert died["detail"].startswith("the problem's process ended with status 1: torch.AcceleratorError: CUDA "
                                     "error: device-side assert triggered (first device-side assertion: ")
    assert "Assertion `idx >= 0 && idx < size` failed." in died["detail"]
    assert died["stderr_tail"][-1] == "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."
    assert last_words("") == "no output"
    assert last_words("warming up\nKilled\n") == "Killed"  # nothing named: the last line
    assert last_words("ValueError\n  hint\n") == "ValueError"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the GPU reference needs a CUDA device")
def test_float64_reference_on_the_gpu_says_so() -> None:
    case = Case(load_problem(CORRECT, _digest(CORRECT)), "cuda", reference_device="cuda")
    verdict = check(case, lambda xs: case.model(*xs))
    assert verdict.status == "passed" and verdict.reference == "float64 on the GPU"


GRAD_MODE = '''import torch
import torch.nn as nn

seen = []

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        seen.append(torch.is_grad_enabled())
        return self.linear(x)

def get_inputs():
    return [torch.randn(2, 4)]

def get_init_inputs():
    return []
'''


def test_every_call_runs_with_autograd_off_as_upstream_times_it() -> None:
    """KernelBench's timing scripts run the forward under torch.no_grad(); with autograd recording, the output
    would hold a graph and torch.compile would build a training graph (saving activations) instead."""
    module = load_problem(GRAD_MODE, _digest(GRAD_MODE))
    case = Case(module, "cpu")
    prepared = prepare(case, "eager")
    assert prepared.verdict.status == "passed", prepared.verdict.detail
    out = prepared.call()
    assert isinstance(out, torch.Tensor) and not out.requires_grad and out.grad_fn is None
    assert module.seen and not any(module.seen)  # the first call, both checks and the timed call


STATEFUL = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.i2h = nn.Linear(8, 4)
        self.hidden = torch.randn(2, 4)
        self.h0 = torch.zeros(2, 4)

    def forward(self, x, initial_hidden):
        self.h0 = self.h0.to(x.device)  # the same tensor once it is there: not a rebinding
        self.hidden.copy_(initial_hidden)
        self.hidden = self.hidden.to(x.device)
        self.hidden = torch.tanh(self.i2h(torch.cat((x, self.hidden), dim=1)))  # KernelBench 3/33's pattern
        return self.hidden + self.h0

def get_inputs():
    return [torch.randn(2, 4), torch.randn(2, 4)]

def get_init_inputs():
    return []
'''


def test_a_call_that_replaces_its_models_state_tensors_is_not_captured() -> None:
    stateful = Case(load_problem(STATEFUL, _digest(STATEFUL)), "cpu")
    inputs = stateful.timed_inputs()
    reason = rebound_state(stateful.model, lambda: stateful.model(*inputs))
    assert reason is not None and "(hidden)" in reason and "memory freed during capture" in reason
    plain = Case(load_problem(CORRECT, _digest(CORRECT)), "cpu")
    plain_inputs = plain.timed_inputs()
    assert rebound_state(plain.model, lambda: plain.model(*plain_inputs)) is None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="graph capture needs a CUDA device")
def test_the_cross_check_of_a_state_replacing_call_uses_per_call_events() -> None:
    from kernelindex.runner.cuda import CudaDevice

    case = Case(load_problem(STATEFUL, _digest(STATEFUL)), "cuda")
    inputs = case.timed_inputs()
    call = lambda: case.model(*inputs)  # noqa: E731
    method, median_ns, reason = CudaDevice().cross_check(call, no_capture=rebound_state(case.model, call))
    assert method == "per_call_events" and median_ns > 0
    assert reason is not None and reason.startswith("graph capture not attempted: each call replaces")
