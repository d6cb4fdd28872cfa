"""Multi-token attention (dense and sparse), fused neighborhood attention and fused MoE: inputs honour the
case, the float64 reference agrees with KernelIndex's plain-PyTorch baseline in value and gradient, and
the reference's pieces (sparsemax, the neighborhood window, the routing) do what the semantics say."""

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

from kernelindex.runner.ops.attention import neighborhood_mask, sparsemax  # noqa: E402

MTA = {"batch": 2, "in_channels": 4, "out_channels": 4, "seq": 8, "kernel_size": 3, "groups": 2}
CASES = {
    "multi-token-attention": (MTA, {"bias": True}),
    "sparse-multi-token-attention": (MTA, {"bias": True}),
    "fused-neighborhood-attention": ({"batch": 2, "seq": 12, "hidden": 16, "heads": 2},
                                     {"kernel_size": 5, "dilation": 2, "bias": True}),
    "fused-moe": ({"tokens": 10, "experts": 4, "hidden": 8, "intermediate": 6, "top_k": 2}, {}),
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


def test_sparsemax_projects_onto_the_simplex() -> None:
    z = torch.tensor([[3.0, 1.0, 0.2, float("-inf")], [0.1, 0.1, 0.1, 0.1]], dtype=torch.float64)
    p = sparsemax(z)
    assert torch.allclose(p.sum(-1), torch.ones(2, dtype=torch.float64))
    assert p[0].tolist() == [1.0, 0.0, 0.0, 0.0]  # a clear winner takes all
    assert torch.allclose(p[1], torch.full((4,), 0.25, dtype=torch.float64))


def test_multi_token_attention_is_causal() -> None:
    x = fresh_inputs("multi-token-attention", workload("multi-token-attention"))
    for slug in ("multi-token-attention", "sparse-multi-token-attention"):
        y = op(slug).reference(x)["y"]
        assert bool((y.triu(1) == 0).all()) and bool((y.tril() != 0).any())


def test_neighborhood_window_follows_kernel_size_and_dilation() -> None:
    mask = neighborhood_mask(9, kernel_size=5, dilation=2, device=torch.device("cpu"))
    assert [j for j in range(9) if mask[4, j]] == [0, 2, 4, 6, 8]
    assert [j for j in range(9) if mask[0, j]] == [0, 2, 4]
    x = fresh_inputs("fused-neighborhood-attention", workload("fused-neighborhood-attention"))
    assert x["param:kernel_size"].item() == 5 and x["param:dilation"].item() == 2 and x["param:heads"].item() == 2


def test_moe_routing_picks_distinct_experts_with_normalised_weights() -> None:
    x = fresh_inputs("fused-moe", workload("fused-moe"))
    index = x["top_k_index"]
    assert index.dtype == torch.int32 and int(index.min()) >= 0 and int(index.max()) < 4
    assert all(len(set(row.tolist())) == row.numel() for row in index)
    assert torch.allclose(x["top_k_weights"].sum(-1), torch.ones(10))
