"""Correctness checks catch what a fast-but-wrong implementation does (CPU, plain torch)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from kernelindex import registry  # noqa: E402
from kernelindex.runner.correctness import check  # noqa: E402
from kernelindex.runner.ops import operations  # noqa: E402
from kernelindex.runner.reference import rotate_half  # noqa: E402

OPS = operations()

ROPE = registry.load_operation("rope")
EMBEDDING = registry.load_operation("embedding")


def rope_fp32(x):
    """A correct implementation in the inputs' dtype (what a real kernel computes)."""
    def call():
        cos, sin = x["cos"].unsqueeze(1), x["sin"].unsqueeze(1)
        return {"q_out": x["q"] * cos + rotate_half(x["q"]) * sin, "k_out": x["k"] * cos + rotate_half(x["k"]) * sin}
    return call


def run_check(operation, workload, bind, *, in_place=False):
    return check(operation, workload, OPS[operation.metadata.name], bind, in_place=in_place, device="cpu")


def test_correct_rope_passes(rope_case) -> None:
    result = run_check(ROPE, rope_case, rope_fp32)
    assert result.passed, result.detail
    assert result.relative_error < 1e-6
    assert result.mutated_inputs == []
    assert result.trials == 3


def test_bf16_rope_passes_under_the_specs_tolerance(rope_bf16_case) -> None:
    result = run_check(ROPE, rope_bf16_case, rope_fp32)
    assert result.passed, result.detail
    assert 0 < result.relative_error < ROPE.spec.tolerance["bf16"]


def test_zeros_fail(rope_case) -> None:
    def bind(x):
        return lambda: {"q_out": torch.zeros_like(x["q"]), "k_out": torch.zeros_like(x["k"])}

    result = run_check(ROPE, rope_case, bind)
    assert not result.passed
    assert "trivially small" in result.detail


def test_nan_fails(rope_case) -> None:
    def bind(x):
        def call():
            out = rope_fp32(x)()
            out["k_out"][0, 0, 0, 0] = float("nan")
            return out
        return call

    result = run_check(ROPE, rope_case, bind)
    assert not result.passed
    assert "NaN/Inf" in result.detail and "k_out" in result.detail


def test_stale_cached_output_fails(rope_case) -> None:
    cache = {}

    def bind(x):
        def call():
            if "out" not in cache:
                cache["out"] = rope_fp32(x)()
            return cache["out"]
        return call

    result = run_check(ROPE, rope_case, bind)
    assert not result.passed
    assert result.detail.startswith("check 2 of 3")  # right once, then stale on fresh inputs
    assert "relative error" in result.detail


def test_unwritten_output_fails(embedding_case) -> None:
    def bind(x):
        out = torch.empty((*x["input_ids"].shape, x["weight"].shape[1]), dtype=x["weight"].dtype)
        return lambda: {"y": out}

    result = run_check(EMBEDDING, embedding_case, bind)
    assert not result.passed


def test_partly_written_output_fails(embedding_case) -> None:
    def bind(x):
        def call():
            y = torch.nn.functional.embedding(x["input_ids"], x["weight"])
            y[0, 0] = torch.full_like(y[0, 0], float("nan"))  # what a poisoned, unwritten row reads as
            return {"y": y}
        return call

    result = run_check(EMBEDDING, embedding_case, bind)
    assert not result.passed and "NaN" in result.detail


def _in_place_rope(x):
    def call():  # like a kernel inside an autograd Function: writes the leaves outside autograd
        with torch.no_grad():
            cos, sin = x["cos"].unsqueeze(1), x["sin"].unsqueeze(1)
            q_new = x["q"] * cos + rotate_half(x["q"]) * sin
            k_new = x["k"] * cos + rotate_half(x["k"]) * sin
            x["q"].copy_(q_new)
            x["k"].copy_(k_new)
        return {"q_out": x["q"], "k_out": x["k"]}
    return call


def test_mutating_an_input_declared_read_only_fails(rope_case) -> None:
    result = run_check(ROPE, rope_case, _in_place_rope, in_place=False)
    assert not result.passed
    assert "mutated input k, q" in result.detail and "read-only" in result.detail
    assert result.mutated_inputs == ["k", "q"]


def test_declared_in_place_is_allowed_and_recorded(rope_case) -> None:
    result = run_check(ROPE, rope_case, _in_place_rope, in_place=True)
    assert result.passed, result.detail
    assert result.mutated_inputs == ["k", "q"]
    assert "declared in place, wrote k, q in place" in result.detail


def test_in_place_declaration_does_not_cover_inputs_outside_may_alias(embedding_case) -> None:
    def bind(x):
        def call():
            y = torch.nn.functional.embedding(x["input_ids"], x["weight"])
            with torch.no_grad():
                x["weight"].mul_(1.0).add_(0.5)
            return {"y": y}
        return call

    result = run_check(EMBEDDING, embedding_case, bind, in_place=True)
    assert not result.passed and "mutated input weight" in result.detail


def test_wrong_shape_and_dtype_fail(embedding_case) -> None:
    def wrong_dtype(x):
        return lambda: {"y": torch.nn.functional.embedding(x["input_ids"], x["weight"]).double()}

    def wrong_shape(x):
        return lambda: {"y": torch.nn.functional.embedding(x["input_ids"], x["weight"]).flatten(0, 1)}

    assert "dtype" in run_check(EMBEDDING, embedding_case, wrong_dtype).detail
    assert "shape" in run_check(EMBEDDING, embedding_case, wrong_shape).detail


def test_embedding_must_be_exact(embedding_case) -> None:
    def off_by_a_little(x):
        return lambda: {"y": torch.nn.functional.embedding(x["input_ids"], x["weight"]) * (1 + 1e-6)}

    result = run_check(EMBEDDING, embedding_case, off_by_a_little)
    assert not result.passed and "exceeds tolerance 0" in result.detail


def test_inputs_follow_the_workload_strides(rope_case) -> None:
    from kernelindex.runner.inputs import make_inputs

    x = make_inputs(OPS["rope"], rope_case, seed=3, device="cpu")
    decl = {t.name: t for t in rope_case.spec.tensors}
    assert list(x["q"].stride()) == decl["q"].strides
    assert not x["q"].is_contiguous() and x["q"].transpose(1, 2).is_contiguous()
    y = make_inputs(OPS["rope"], rope_case, seed=4, device="cpu")
    assert not torch.equal(x["q"], y["q"])  # fresh inputs per seed
    assert torch.count_nonzero(x["q"]) == x["q"].numel()
    half = x["cos"].shape[-1] // 2
    assert torch.equal(x["cos"][..., :half], x["cos"][..., half:])  # real rotary table: cat(freqs, freqs)
