"""Issue 25 on the shipped data: runner-9's verified H200 GEMMs. gemm-n4096-k4096 at M = 8192 ranks cuBLAS and XLA
by device time, each row with its achieved TFLOP/s and that rate's share of the datasheet fp16 dense peak (the
physical floor's bound), and the B200 cohort FlashInfer-Bench reported is beside it with its own floor."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

OP = "gemm-n4096-k4096"
FP16_DENSE_PEAK = 989.5e12  # NVIDIA H200 datasheet, TFLOP/s dense (registry/gpus.yaml)


def _m8192(client: TestClient) -> str:
    workloads = client.get(f"/api/v1/operations/{OP}").json()["workloads"]
    return next(w["key"] for w in workloads if w["axes"]["m"] == 8192)


def test_verified_h200_rows_show_their_share_of_the_fp16_peak(client: TestClient) -> None:
    key = _m8192(client)
    page = client.get(f"/api/v1/operations/{OP}?gpu=h200&workload={key}").json()
    # Runner 9's cuBLAS and XLA runs and runner 15's max-autotune (a campaign without Liger installed: same
    # platform, one cohort) rank together; the cohort names no single runner.
    assert page["cohort_line"]["runner"] is None
    rows = {r["implementation"]["title"]: r for r in page["ranked"]}
    assert set(rows) == {"torch.matmul (cuBLAS)", "XLA through JAX (jax.jit a @ b.T)",
                         "torch.compile max-autotune-no-cudagraphs (cuBLAS or Triton, fastest)"}
    assert {r["runner"] for r in page["ranked"]} == {"kernelindex-h200-runner-9", "kernelindex-h200-runner-15"}
    for row in rows.values():
        flops = 2 * 8192 * 4096 * 4096
        assert row["throughput_unit"] == "TFLOP/s"
        assert row["throughput"] == pytest.approx(flops / (row["median_ns"] * 1e-9) / 1e12)
        assert row["peak_share"] == pytest.approx(row["throughput"] * 1e12 / FP16_DENSE_PEAK)
        assert row["peak_share"] == pytest.approx(1 / row["floor_ratio"])
        assert 0.6 <= row["peak_share"] < 1  # issue 25's bar for cuBLAS at M >= 4096; XLA and Inductor reached it too
    html = client.get(f"/operations/{OP}?gpu=h200&workload={key}").text
    share = round(rows["torch.matmul (cuBLAS)"]["peak_share"] * 100)
    assert f"{share}% of peak" in html


def test_the_b200_cohort_stands_beside_the_verified_one(client: TestClient) -> None:
    key = _m8192(client)
    page = client.get(f"/api/v1/operations/{OP}?gpu=b200&workload={key}").json()
    assert "B200" in page["cohort_line"]["gpu"] and page["floor"]["physical"]["compute_ns"]
    gpus = {c["gpu"] for c in page["cohorts"]} if isinstance(page["cohorts"][0], dict) else set()
    assert any("H200" in g for g in gpus) and any("B200" in g for g in gpus)


def test_a_gpu_not_measured_names_the_peak_its_compute_bound_floor_divides_by(client: TestClient) -> None:
    """The "not measured on H100" line once said "(3,350 GB/s datasheet)" under a floor that FLOPs set (asked of the
    H100 PCIe: the H100 SXM has verified GEMMs since 2026-12-07)."""
    from kernelindex import registry

    key = _m8192(client)
    asked = client.get(f"/api/v1/operations/{OP}?gpu=h100-pcie&workload={key}").json()["asked_gpu"]
    peak = registry.gpus()["h100-pcie"].peaks_tflops["fp16"]
    assert asked["bound"] == "compute" and asked["peak_tflops"] == pytest.approx(peak)
    assert asked["floor_ns"] == pytest.approx(2 * 8192 * 4096 * 4096 / (peak * 1e12) * 1e9)
    html = client.get(f"/operations/{OP}?gpu=h100-pcie&workload={key}").text
    assert f"(compute-bound: {peak:.1f} TFLOP/s dense datasheet; estimate, not evidence)" in html
    rope = client.get("/api/v1/operations/rope?gpu=b200").json()["asked_gpu"]  # rope: no B200 run (H100: measured)
    assert rope["bound"] == "bandwidth" and rope["peak_tflops"] is None  # a bandwidth-bound floor keeps its GB/s
    assert "8,000 GB/s datasheet; estimate, not evidence" in client.get("/operations/rope?gpu=b200").text
