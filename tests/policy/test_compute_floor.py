"""The attainable compute floor (issue 25 item 2): a 16-bit GEMM's attainable floor divides its FLOPs by the
best GEMM rate seen on the GPU (the runner's 8192³ fp16 ceiling GEMM), never above the datasheet peak; the
physical floor keeps the datasheet rate; anything that is not a 16-bit GEMM keeps the datasheet rate too."""

from __future__ import annotations

from kernelindex import registry
from kernelindex.policy.floor import Attainable, attainable_compute, floor_estimate

H200 = registry.gpus()["h200"]
SEEN = Attainable(4.3e12, "the copy ceiling", compute_flops_per_s=700e12, compute_source="the ceiling GEMM")


def _tensor(name: str, shape: list[int]) -> dict:
    return {"name": name, "dtype": "fp16", "shape": shape, "strides": [shape[1], 1]}


def _gemm(m: int) -> tuple[dict, dict]:
    op = registry.load_operation("gemm-n4096-k4096").model_dump(mode="json")["spec"]
    wl = {"axes": {"m": m, "n": 4096, "k": 4096}, "dtypes": {},
          "tensors": [_tensor("a", [m, 4096]), _tensor("b", [4096, 4096]), _tensor("c", [m, 4096])]}
    return op, wl


def test_a_large_gemm_is_held_to_the_measured_gemm_rate() -> None:
    op, wl = _gemm(8192)
    physical = floor_estimate(op, wl, H200)
    attainable = floor_estimate(op, wl, H200, attainable=SEEN)
    flops = 2 * 8192 * 4096 * 4096
    assert physical.compute_ns == flops / 989.5e12 * 1e9 and physical.compute_source == ""
    assert attainable.compute_ns == flops / 700e12 * 1e9 and attainable.bound == "compute"
    assert attainable.compute_source.startswith("700 TFLOP/s, the ceiling GEMM")
    assert attainable.to_json()["compute_source"] == attainable.compute_source
    assert attainable.to_json()["compute_run_id"] is None  # the ceiling GEMM is no run
    by_run = Attainable(4.3e12, "copy", compute_flops_per_s=800e12, compute_source="verified run 01388e3282e2ec2c",
                        compute_run_id="01388e3282e2ec2c")
    assert floor_estimate(op, wl, H200, attainable=by_run).to_json()["compute_run_id"] == "01388e3282e2ec2c"
    small = floor_estimate({**op, "family": "mlp"}, wl, H200, attainable=by_run)  # no GEMM rate: no GEMM run named
    assert small.to_json()["compute_run_id"] is None


def test_the_measured_rate_never_exceeds_the_datasheet_peak() -> None:
    op, wl = _gemm(8192)
    fast = Attainable(4.3e12, "copy", compute_flops_per_s=2000e12, compute_source="a fast run")
    assert attainable_compute(op, wl, fast, 989.5e12) == (989.5e12, "990 TFLOP/s, a fast run")


def test_other_dtypes_and_families_keep_the_datasheet_rate() -> None:
    op, wl = _gemm(64)
    fp32 = {**op, "inputs": [{**t, "dtype": "fp32"} for t in op["inputs"]]}
    assert attainable_compute(fp32, wl, SEEN, 989.5e12) is None
    assert attainable_compute({**op, "family": "mlp"}, wl, SEEN, 989.5e12) is None
    assert attainable_compute(op, wl, Attainable(4.3e12, "copy"), 989.5e12) is None  # no ceiling GEMM measured
    assert attainable_compute(op, wl, SEEN, 989.5e12) == (700e12, "700 TFLOP/s, the ceiling GEMM")


def test_fp8_and_int8_gemms_on_hopper_are_held_to_their_dense_peaks() -> None:
    """Issue 43 item 4: an FP8 GEMM at m = 8192 on the H200 had only a bandwidth floor (no FP8 peak listed); its
    compute floor is its FLOPs over the datasheet's dense FP8 rate (1,979 TFLOPS: half the sparsity figure)."""
    op, wl = _gemm(8192)
    for dtype, peak in (("fp8_e4m3", 1979e12), ("int8", 1979e12)):
        typed = {**wl, "tensors": [{**t, "dtype": dtype} for t in wl["tensors"]], "dtypes": {"T": dtype}}
        floor = floor_estimate(op, typed, H200)
        assert floor.peak_flops_per_s == peak and floor.bound == "compute"
        assert floor.compute_ns == 2 * 8192 * 4096 * 4096 / peak * 1e9
    for slug, fp8 in (("h100-sxm", 1979), ("h100-pcie", 1513), ("h200", 1979)):
        assert registry.gpus()[slug].peaks_tflops["fp8"] == registry.gpus()[slug].peaks_tflops["int8"] == fp8
