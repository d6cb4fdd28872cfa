"""The float64 references of LM-sized losses run a chunk of rows at a time (activation checkpointing):
splitting into many chunks gives the same loss and the same gradients as one chunk."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from op_cases import case, fresh_inputs, op  # noqa: E402

from kernelindex.runner.ops import _common  # noqa: E402

LM = {"hidden": 8, "vocab": 17}
CASES = {
    "cross-entropy": ({"batch": 3, "seq": 4, "vocab": 17}, {}),
    "kl-div": ({"batch": 3, "seq": 4, "vocab": 17}, {}),
    "jsd": ({"batch": 3, "seq": 4, "vocab": 17}, {}),
    "tvd": ({"batch": 3, "seq": 4, "vocab": 17}, {}),
    "fused-linear-cross-entropy": ({"bt": 12, **LM}, {}),
    "fused-linear-jsd": ({"bt": 12, **LM}, {}),
    "distill-jsd-loss": ({"bt": 12, **LM}, {"weight_hard_loss": 0.4, "weight_soft_loss": 0.6, "ignore_index": -100}),
    "fused-linear-orpo-loss": ({"batch": 6, "seq": 3, **LM}, {}),
    "fused-linear-kto-loss": ({"batch": 6, "seq": 3, **LM}, {"beta": 0.1, "ignore_index": 42, "bias": True}),
    "fused-linear-grpo-loss-sequence": ({"batch": 6, "seq": 3, **LM}, {}),
}


def _loss_and_grads(slug: str, inputs: dict) -> tuple[torch.Tensor, list[torch.Tensor]]:
    definition = op(slug)
    leaves = {n: t.detach().clone().requires_grad_(n in definition.grad_inputs) for n, t in inputs.items()}
    loss = definition.reference(leaves)["loss"]
    loss.backward()
    return loss.detach(), [leaves[n].grad for n in definition.grad_inputs]


@pytest.mark.parametrize("slug", sorted(CASES))
def test_many_chunks_equal_one(slug: str, monkeypatch: pytest.MonkeyPatch) -> None:
    axes, params = CASES[slug]
    inputs = fresh_inputs(slug, case(slug, axes, "fp32", params))
    whole, whole_grads = _loss_and_grads(slug, inputs)
    monkeypatch.setattr(_common, "REFERENCE_CHUNK_ELEMENTS", 40)  # a row or two per chunk
    chunked, chunked_grads = _loss_and_grads(slug, inputs)
    assert torch.allclose(whole, chunked, rtol=1e-12, atol=0)
    for a, b in zip(whole_grads, chunked_grads, strict=True):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-14)
