"""floor-v1 for the backward and forward+backward regions, and the direction-aware measured floor."""

from __future__ import annotations

import pytest

from kernelindex import registry
from kernelindex.policy.floor import Ceilings, floor_estimate, gradient_inputs

H200 = registry.gpus()["h200"]
MIB16 = 2048 * 4096 * 2  # one bf16 [2048, 4096] tensor


def _spec(slug: str) -> dict:
    return registry.load_operation(slug).model_dump(mode="json")["spec"]


def _tensor(name: str, dtype: str, shape: list[int]) -> dict:
    strides, step = [], 1
    for dim in reversed(shape):
        strides.insert(0, step)
        step *= dim
    return {"name": name, "dtype": dtype, "shape": shape, "strides": strides}


RMS = {"axes": {"rows": 2048, "hidden": 4096}, "dtypes": {"T": "bf16"},
       "tensors": [_tensor("x", "bf16", [2048, 4096]), _tensor("weight", "bf16", [4096]),
                   _tensor("y", "bf16", [2048, 4096])]}


def _bytes(floor) -> dict[str, tuple[str, int]]:
    return {t.name: (t.direction, t.bytes) for t in floor.tensors}


def test_rms_norm_regions_count_what_each_region_must_move() -> None:
    op = _spec("rms-norm")
    forward = floor_estimate(op, RMS, H200, region="forward", operation="rms-norm")
    backward = floor_estimate(op, RMS, H200, region="backward", operation="rms-norm")
    both = floor_estimate(op, RMS, H200, region="forward+backward", operation="rms-norm")
    assert forward.bytes_total == 2 * MIB16 + 8192
    assert _bytes(backward) == {
        "upstream gradient of y": ("read", MIB16), "x": ("read", MIB16), "weight": ("read", 8192),
        "gradient of x": ("write", MIB16), "gradient of weight": ("write", 8192),
    }
    # Inputs and the upstream gradient read once, the output and each gradient written once.
    assert both.bytes_total == 4 * MIB16 + 2 * 8192
    assert backward.region == "backward" and backward.to_json()["region"] == "backward"
    assert forward.floor_ns < backward.floor_ns < both.floor_ns


def test_linear_operations_do_not_read_what_their_backward_does_not_need() -> None:
    rope = {"axes": {"seq": 2048, "hidden": 8192, "q_heads": 32, "kv_heads": 8}, "dtypes": {"T": "bf16"},
            "tensors": [_tensor("q", "bf16", [1, 32, 2048, 256]), _tensor("k", "bf16", [1, 8, 2048, 256]),
                        _tensor("cos", "bf16", [1, 2048, 256]), _tensor("sin", "bf16", [1, 2048, 256]),
                        _tensor("q_out", "bf16", [1, 32, 2048, 256]), _tensor("k_out", "bf16", [1, 8, 2048, 256])]}
    names = set(_bytes(floor_estimate(_spec("rope"), rope, H200, region="backward", operation="rope")))
    # Rotation is linear in q and k: cos and sin are read, q and k are not; no gradient for the tables.
    assert names == {"upstream gradient of q_out", "upstream gradient of k_out", "cos", "sin",
                     "gradient of q", "gradient of k"}


def test_embedding_backward_writes_the_whole_table_gradient() -> None:
    wl = {"axes": {"batch": 32, "seq": 512, "vocab": 131072, "hidden": 768}, "dtypes": {"T": "fp32"},
          "tensors": [_tensor("input_ids", "int64", [32, 512]), _tensor("weight", "fp32", [131072, 768]),
                      _tensor("y", "fp32", [32, 512, 768])]}
    op = _spec("embedding")
    assert gradient_inputs(op, wl) == ["weight"]  # ids are integers: no gradient
    backward = _bytes(floor_estimate(op, wl, H200, region="backward", operation="embedding"))
    assert backward == {"upstream gradient of y": ("read", 32 * 512 * 768 * 4), "input_ids": ("read", 32 * 512 * 8),
                        "gradient of weight": ("write", 131072 * 768 * 4)}
    both = _bytes(floor_estimate(op, wl, H200, region="forward+backward", operation="embedding"))
    assert both["weight"] == ("read", 16384 * 768 * 4)  # the gather bound still holds for the read


def test_mlp_compute_floor_scales_with_the_region() -> None:
    wl = {"axes": {"batch": 4, "seq": 4096, "hidden": 4096, "intermediate": 11008}, "dtypes": {"T": "bf16"},
          "tensors": [_tensor("x", "bf16", [4, 4096, 4096]), _tensor("gate_weight", "bf16", [11008, 4096]),
                      _tensor("up_weight", "bf16", [11008, 4096]), _tensor("down_weight", "bf16", [4096, 11008]),
                      _tensor("y", "bf16", [4, 4096, 4096])]}
    op = _spec("swiglu-mlp")
    floors = {r: floor_estimate(op, wl, H200, region=r, operation="swiglu-mlp") for r in
              ("forward", "backward", "forward+backward")}
    assert floors["backward"].flops == 2 * floors["forward"].flops
    assert floors["forward+backward"].flops == 3 * floors["forward"].flops
    assert all(f.bound == "compute" and f.floor_ns == f.compute_ns for f in floors.values())


def test_measured_floor_uses_the_ceiling_of_each_direction() -> None:
    op = _spec("rms-norm")
    ceilings = Ceilings(copy=4.2e12, read=4.6e12, write=4.4e12)
    floor = floor_estimate(op, RMS, H200, region="forward", operation="rms-norm", measured=ceilings)
    read, write = MIB16 + 8192, MIB16
    assert floor.measured and floor.floor_ns == pytest.approx(max(read / 4.6e12, write / 4.4e12) * 1e9)
    assert "read-only and write-only" in floor.bandwidth_source
    # Below what bytes / copy bandwidth gives: a read-heavy call may beat the copy rate, and the floor stays below it.
    assert floor.floor_ns < floor.bytes_total / 4.2e12 * 1e9


def test_no_grad_forward_moves_what_forward_moves() -> None:
    op = _spec("rms-norm")
    forward = floor_estimate(op, RMS, H200, region="forward", operation="rms-norm")
    no_grad = floor_estimate(op, RMS, H200, region="forward-no-grad", operation="rms-norm")
    assert _bytes(no_grad) == _bytes(forward) and no_grad.floor_ns == forward.floor_ns
    assert no_grad.region == "forward-no-grad"


def test_unknown_region_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown timed region"):
        floor_estimate(_spec("rms-norm"), RMS, H200, region="sideways")


def test_divergence_backward_writes_only_the_first_distributions_gradient() -> None:
    wl = {"axes": {"bt": 1024, "vocab": 4096}, "dtypes": {"T": "fp32"},
          "tensors": [_tensor("p", "fp32", [1024, 4096]), _tensor("q", "fp32", [1024, 4096]),
                      _tensor("loss", "fp32", [])]}
    spec = _spec("tvd")
    names = {t["name"]: t for t in spec["inputs"] + spec["outputs"]}
    wl["tensors"] = [_tensor(n, "fp32", [1024, 4096]) if n in ("p", "q") else _tensor(n, "fp32", [])
                     for n in names]
    writes = [t.name for t in floor_estimate(spec, wl, H200, region="backward", operation="tvd").tensors
              if t.direction == "write"]
    assert writes == ["gradient of p"]
