"""The causal ragged prefills on the shipped data: each of the 7 pages shows a compute floor counted by the
registry's rule (the specs declare none and keep their signed digests), the floor is the larger of the
two bounds, and page, API and CLI give the same figures. h32-kv4-d128's largest traced case on the H200:
FlashAttention-2's verified run is held to a compute-bound floor."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from kernelindex.catalog.db import Catalog
from kernelindex.cli import app as ki

OP = "gqa-ragged-prefill-causal-h32-kv4-d128"
SLUGS = ["h20-kv4-d128", "h24-kv8-d128", "h32-kv16-d128", "h32-kv4-d128", "h32-kv8-d128", "h32-kv8-d64",
         "h8-kv1-d256"]
BF16_DENSE_PEAK = 989.5e12  # NVIDIA H200 datasheet (registry/gpus.yaml)


def _largest(client: TestClient) -> str:
    workloads = client.get(f"/api/v1/operations/{OP}").json()["workloads"]
    return next(w["key"] for w in workloads if w["axes"]["total_q"] == 16294)


@pytest.mark.parametrize("name", SLUGS)
def test_every_ragged_prefill_page_has_a_compute_floor(client: TestClient, name: str) -> None:
    slug = f"gqa-ragged-prefill-causal-{name}"
    page = client.get(f"/api/v1/operations/{slug}").json()
    assert page["semantics"]["flops"].startswith("4 * num_qo_heads * head_dim *")
    assert "with at least total_q" in page["semantics"]["flops_why"]
    physical = page["floor"]["physical"]
    assert physical["compute_ns"] and physical["work_ns"] == max(physical["compute_ns"], physical["memory_ns"])
    assert physical["floor_ns"] == max(physical["work_ns"], physical["latency_ns"] or 0)
    assert "with at least total_q" in page["floor"]["explanation"]
    assert "(KernelIndex registry: causal attention 4·H·D per (query, key) pair, with at least" in client.get(
        f"/operations/{slug}").text


def test_flashattention_on_the_largest_case_is_held_to_the_compute_floor(client: TestClient,
                                                                          catalog: Catalog) -> None:
    key = _largest(client)
    page = client.get(f"/api/v1/operations/{OP}?gpu=h200&workload={key}").json()
    flops = 4 * 32 * 128 * (16294 * (16294 + 33) // (2 * 33))
    physical = page["floor"]["physical"]
    assert physical["bound"] == "compute" and physical["flops"] == flops
    assert physical["floor_ns"] == pytest.approx(flops / BF16_DENSE_PEAK * 1e9)
    rows = {r["implementation"]["title"]: r for r in page["ranked"]}
    fa2 = rows["FlashAttention-2 varlen (PyTorch)"]
    assert fa2["throughput_unit"] == "TFLOP/s" and fa2["peak_share"] == pytest.approx(1 / fa2["floor_ratio"])
    assert fa2["median_ns"] > physical["floor_ns"]
    args = ["show", "operation", OP, "--workload", key, "--cohort", page["selected_cohort"], "--json",
            "--database", catalog.url]
    result = CliRunner().invoke(ki, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["floor"] == page["floor"]  # the CLI reads the same floor
