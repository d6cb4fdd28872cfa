"""Two kinds of problem a relative error against float64 cannot judge, on the CPU with tiny problem files:
a reference that is zero up to float64's rounding (level 2 problem 23's shape: a mean of group-normalised
values) is judged against its inputs' scale, and says so; a module with dropout in training mode (level 2
problem 66's shape) is checked with dropout off, says so, and is timed in training mode. Both still fail a
wrong output."""

from __future__ import annotations

import hashlib
from typing import Any

import torch

from kernelindex.runner.problem_checks import FP64_TOLERANCE, check
from kernelindex.runner.problem_module import Case, load_problem

GROUPNORM_MEAN = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 8, 3)
        self.group_norm = nn.GroupNorm(4, 8)

    def forward(self, x):
        return self.group_norm(self.conv(x)).mean(dim=[1, 2, 3, 4])

def get_inputs():
    return [torch.rand(4, 3, 6, 8, 8)]

def get_init_inputs():
    return []
'''
TINY_SCALE = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x * 1e-8

def get_inputs():
    return [torch.rand(64)]

def get_init_inputs():
    return []
'''
DROPOUT = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(16, 32)
        self.norm = nn.BatchNorm1d(32)
        self.dropout = nn.Dropout(0.5)

    def forward(self, x):
        return torch.softmax(self.dropout(self.norm(self.linear(x))), dim=1)

def get_inputs():
    return [torch.rand(8, 16)]

def get_init_inputs():
    return []
'''


def _case(source: str) -> Case:
    return Case(load_problem(source, "sha256:" + hashlib.sha256(source.encode()).hexdigest()), "cpu")


def test_a_reference_that_is_zero_up_to_rounding_is_judged_against_the_inputs_scale() -> None:
    case = _case(GROUPNORM_MEAN)
    with torch.no_grad():
        x = case.inputs(0)[0]
        assert float(case.model(x).abs().max()) < 1e-6  # float32 rounding, where float64's is about 1e-17
    verdict = check(case, lambda xs: case.model(*xs))
    assert verdict.status == "passed", verdict.detail  # the relative error was about 1e9
    assert verdict.detail.startswith("the float64 reference is negligible against its inputs (RMS ")
    assert "the inputs' 0.5" in verdict.detail and verdict.relative_error is not None
    assert verdict.relative_error < 1e-6 and verdict.tolerance == FP64_TOLERANCE


def test_a_wrong_output_still_fails_where_the_reference_is_negligible() -> None:
    case = _case(GROUPNORM_MEAN)
    off = check(case, lambda xs: case.model(*xs) + 0.01)
    assert off.status == "incorrect_numerical"
    assert "negligible against its inputs" in off.detail and "over the tolerance 0.0001" in off.detail
    unnormalised = check(case, lambda xs: case.model.conv(xs[0]).mean(dim=[1, 2, 3, 4]))
    assert unnormalised.status == "incorrect_numerical"


def test_a_small_but_real_output_is_still_judged_by_its_relative_error() -> None:
    case = _case(TINY_SCALE)
    assert check(case, lambda xs: case.model(*xs)).detail == ""
    doubled = check(case, lambda xs: case.model(*xs) * 2)
    assert doubled.status == "incorrect_numerical" and doubled.detail.startswith("relative error 1 over")


def test_dropout_is_off_for_the_checks_only_and_the_verdict_says_so() -> None:
    case = _case(DROPOUT)
    seen: list[tuple[bool, bool]] = []

    def eager(xs: list[Any]) -> Any:
        seen.append((case.model.norm.training, case.model.dropout.training))
        return case.model(*xs)

    verdict = check(case, eager)
    assert verdict.status == "passed", verdict.detail
    assert seen == [(True, False)] * 2  # BatchNorm keeps its batch statistics; only the dropout is the identity
    assert verdict.detail.startswith("checked with dropout off: Dropout(p=0.5) in eval mode for the checks only")
    assert "the timed call runs in training mode, as upstream times it" in verdict.detail
    assert case.model.training and case.model.dropout.training  # as the timed call runs it
    x = case.timed_inputs()[0]
    assert not torch.equal(case.model(x), case.model(x))  # dropout on again: random


def test_a_wrong_output_still_fails_with_dropout_off() -> None:
    case = _case(DROPOUT)
    verdict = check(case, lambda xs: case.model(*xs).roll(1, dims=1))
    assert verdict.status == "incorrect_numerical" and "over the tolerance" in verdict.detail
    assert "checked with dropout off" in verdict.detail


def test_a_compiled_module_is_checked_with_dropout_off_too() -> None:
    case = _case(DROPOUT)
    compiled = torch.compile(case.model, backend="eager", dynamic=False)
    compiled(*case.timed_inputs())  # its first call, in training mode, as the timed one
    verdict = check(case, lambda xs: compiled(*xs))
    assert verdict.status == "passed", verdict.detail
    assert "checked with dropout off" in verdict.detail


def test_a_problem_without_dropout_carries_no_note() -> None:
    case = _case(TINY_SCALE)
    assert check(case, lambda xs: case.model(*xs)).detail == ""
