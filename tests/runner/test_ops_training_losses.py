"""Distillation, preference and GRPO losses: inputs honour the case (and its parameters), the float64
reference agrees with KernelIndex's plain-PyTorch baseline in value and gradient."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

torch = pytest.importorskip("torch")

from op_cases import (  # noqa: E402
    assert_baseline_matches_reference,
    assert_inputs_honour_case,
    case,
    fresh_inputs,
    op,
)

DISTILL = {"bt": 6, "hidden": 8, "vocab": 17}
PAIRED = {"batch": 4, "seq": 5, "hidden": 8, "vocab": 17}
CASES = {
    "distill-cosine-loss": (DISTILL, {"weight_hard_loss": 0.5, "weight_soft_loss": 0.5, "ignore_index": -100}),
    "distill-jsd-loss": (DISTILL, {"weight_hard_loss": 0.3, "weight_soft_loss": 0.7, "ignore_index": -100}),
    "fused-linear-cpo-loss": (PAIRED, {}),
    "fused-linear-orpo-loss": (PAIRED, {}),
    "fused-linear-simpo-loss": (PAIRED, {}),
    "fused-linear-kto-loss": (PAIRED, {"bias": True, "beta": 0.1, "ignore_index": 42}),
    "fused-linear-grpo-loss-token": (PAIRED, {"importance_sampling_level": "token"}),
    "fused-linear-grpo-loss-sequence": (PAIRED, {"importance_sampling_level": "sequence"}),
}


def workload(slug: str, dtype: str = "fp32") -> BaseModel:
    axes, params = CASES[slug]
    return case(slug, axes, dtype, params)


@pytest.mark.parametrize("slug", sorted(CASES))
def test_inputs_honour_the_case(slug: str) -> None:
    assert_inputs_honour_case(slug, workload(slug, "bf16"))


@pytest.mark.parametrize("slug", sorted(CASES))
@pytest.mark.parametrize("dtype", ["fp32", "fp64"])
def test_reference_matches_the_baseline(slug: str, dtype: str) -> None:
    assert_baseline_matches_reference(slug, workload(slug, dtype))


def test_workload_parameters_reach_the_reference() -> None:
    """The loss weights are the workload's: other weights give another loss."""
    x = fresh_inputs("distill-jsd-loss", workload("distill-jsd-loss"))
    assert x["param:weight_soft_loss"].item() == 0.7
    loss = op("distill-jsd-loss").reference(x)["loss"]
    x["param:weight_soft_loss"] = torch.tensor(0.5, dtype=torch.float64)
    assert abs(op("distill-jsd-loss").reference(x)["loss"] - loss) > 1e-6


def test_kto_ignores_its_workload_ignore_index() -> None:
    x = fresh_inputs("fused-linear-kto-loss", workload("fused-linear-kto-loss"))
    assert x["param:ignore_index"].item() == 42 and bool((x["target"] == 42).any())
    assert x["preference_labels"].dtype == torch.bool and float(x["kl"]) > 0


def test_grpo_levels_agree_while_the_ratio_is_one() -> None:
    """The old log-probabilities are the current ones detached (as in the benchmark), so every ratio is 1:
    token and sequence levels then give the same loss and, the masked mean spreading each sequence's
    gradient back over its own tokens, the same gradient under the bnpo normalisation."""
    token, sequence = op("fused-linear-grpo-loss-token"), op("fused-linear-grpo-loss-sequence")
    x = fresh_inputs("fused-linear-grpo-loss-token", workload("fused-linear-grpo-loss-token"))
    grads = []
    for definition in (token, sequence):
        leaf = x["x"].detach().clone().requires_grad_(True)
        loss = definition.reference({**x, "x": leaf})["loss"]
        loss.backward()
        grads.append((loss.detach(), leaf.grad))
    assert torch.allclose(grads[0][0], grads[1][0])
    assert torch.allclose(grads[0][1], grads[1][1]) and grads[0][1].abs().sum() > 0
    assert bool((x["attention_mask"] == 0).any()) and bool((x["attention_mask"] == 1).any())


def test_paired_losses_differ() -> None:
    x = fresh_inputs("fused-linear-cpo-loss", workload("fused-linear-cpo-loss"))
    losses = {slug: float(op(slug).reference(x)["loss"])
              for slug in ("fused-linear-cpo-loss", "fused-linear-orpo-loss", "fused-linear-simpo-loss")}
    assert len(set(losses.values())) == 3, losses
