"""The runner's own correctness check (outputs and every gradient, ``correctness.check``) on the CPU for the
loss, preference, attention and MoE operations: each baseline passes, and a deliberately wrong gradient of
one input is caught in the backward verdict while the forward still passes."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from op_cases import case, op  # noqa: E402

from kernelindex import registry  # noqa: E402
from kernelindex.runner.correctness import CheckResult, check  # noqa: E402

LM = {"hidden": 8, "vocab": 17}
PAIRED = {"batch": 4, "seq": 3, **LM}
DISTILL = {"weight_hard_loss": 0.5, "weight_soft_loss": 0.5, "ignore_index": -100}
CASES = {
    "cross-entropy": ({"batch": 2, "seq": 3, "vocab": 11}, {}),
    "megatron-cross-entropy": ({"seq": 3, "batch": 2, "vocab": 13}, {}),
    "kl-div": ({"batch": 2, "seq": 3, "vocab": 9}, {}),
    "jsd": ({"batch": 2, "seq": 3, "vocab": 9}, {}),
    "tvd": ({"batch": 2, "seq": 3, "vocab": 9}, {}),
    "fused-linear-cross-entropy": ({"bt": 6, **LM}, {}),
    "fused-linear-jsd": ({"bt": 6, **LM}, {}),
    "distill-cosine-loss": ({"bt": 6, **LM}, DISTILL),
    "distill-jsd-loss": ({"bt": 6, **LM}, DISTILL),
    "fused-linear-cpo-loss": (PAIRED, {}),
    "fused-linear-orpo-loss": (PAIRED, {}),
    "fused-linear-simpo-loss": (PAIRED, {}),
    "fused-linear-kto-loss": (PAIRED, {"bias": True, "beta": 0.1, "ignore_index": 42}),
    "fused-linear-grpo-loss-token": (PAIRED, {}),
    "fused-linear-grpo-loss-sequence": (PAIRED, {}),
    "multi-token-attention": ({"batch": 1, "in_channels": 2, "out_channels": 2, "seq": 6, "kernel_size": 3,
                               "groups": 1}, {"bias": True}),
    "sparse-multi-token-attention": ({"batch": 1, "in_channels": 2, "out_channels": 2, "seq": 6, "kernel_size": 3,
                                      "groups": 1}, {"bias": True}),
    "fused-neighborhood-attention": ({"batch": 1, "seq": 8, "hidden": 8, "heads": 2}, {"kernel_size": 3,
                                                                                        "dilation": 1}),
    "fused-moe": ({"tokens": 6, "experts": 3, "hidden": 8, "intermediate": 4, "top_k": 2}, {}),
}


def _run(slug: str, bind: Any) -> CheckResult:
    axes, params = CASES[slug]
    return check(registry.load_operation(slug), case(slug, axes, "fp32", params), op(slug), bind,
                 in_place=False, device="cpu", trials=1, gradients=True)


@pytest.mark.parametrize("slug", sorted(CASES))
def test_the_baseline_passes_outputs_and_gradients(slug: str) -> None:
    baseline = op(slug).adapters()[0]
    assert baseline.missing() is None and op(slug).unavailable is None
    baseline.start_case()
    result = _run(slug, baseline.bind)
    assert result.passed and result.gradient_passed, result.detail or result.gradient_detail


class _DoubledGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx: object, x: torch.Tensor) -> torch.Tensor:
        return x.view_as(x)

    @staticmethod
    def backward(ctx: object, grad: torch.Tensor) -> torch.Tensor:
        return grad * 2


@pytest.mark.parametrize(("slug", "wrong"), [("cross-entropy", "logits"), ("fused-linear-cross-entropy", "weight"),
                                              ("fused-linear-kto-loss", "bias"), ("fused-moe", "top_k_weights")])
def test_a_wrong_gradient_of_one_input_is_caught(slug: str, wrong: str) -> None:
    baseline = op(slug).adapters()[0]

    def bind(x: dict) -> Any:
        return baseline.binder(baseline, {**x, wrong: _DoubledGradient.apply(x[wrong])})

    result = _run(slug, bind)
    assert result.passed and result.passed_for("forward")
    assert result.gradient_passed is False and not result.passed_for("backward")
    assert f"gradient of {wrong}" in result.detail_for("backward")
