"""Issue 43 item 4 (issue 45 item 5): every floor includes the GPU's measured minimum kernel time, as a maximum
with the work's time, and a GPU no runner measured says it has no latency term."""

from __future__ import annotations

from kernelindex import registry
from kernelindex.policy.floor import floor_estimate


def _spec(slug: str) -> dict:
    return registry.load_operation(slug).model_dump(mode="json")["spec"]


def _tensor(name: str, shape: list[int]) -> dict:
    return {"name": name, "dtype": "bf16", "shape": shape, "strides": []}


def _rms(rows: int, hidden: int) -> dict:
    return {"axes": {"rows": rows, "hidden": hidden}, "dtypes": {"T": "bf16"},
            "tensors": [_tensor("x", [rows, hidden]), _tensor("weight", [hidden]), _tensor("y", [rows, hidden])]}


def test_the_measured_gpus_carry_their_shortest_call_and_no_other_gpu_borrows_it() -> None:
    measured = {m.product: m.min_call_ns for m in registry.measured_ceilings().values()}
    gpus = registry.gpus()
    assert gpus["h100-sxm"].min_call_ns == measured["NVIDIA H100 80GB HBM3"] == 1230.0
    assert gpus["h200"].min_call_ns == measured["NVIDIA H200"] == 1130.0
    # The PCIe part, and an H100 whose variant a source did not record, were never measured: no figure is guessed.
    assert gpus["h100-pcie"].min_call_ns is None and gpus["h100-variant-not-recorded"].min_call_ns is None
    assert gpus["b200"].min_call_ns is None and gpus["a100-80gb"].min_call_ns is None


def test_a_tiny_call_is_floored_by_the_kernel_time_not_its_bytes() -> None:
    floor = floor_estimate(_spec("rms-norm"), _rms(1, 64), registry.gpus()["h200"], operation="rms-norm")
    assert floor.work_ns < 1 and floor.latency_ns == 1130.0  # 384 bytes at 4.8 TB/s: 0.08 ns
    assert floor.floor_ns == 1130.0 and floor.bound == "latency" and floor.work_bound == "bandwidth"
    assert floor.latency_words.startswith("Includes the H200's measured minimum kernel time, 1.13 µs")
    shown = floor.to_json()
    assert shown["floor_ns"] == 1130.0 and shown["latency_ns"] == 1130.0 and shown["bound"] == "latency"
    assert "1.13 µs" in str(shown["latency"]) and shown["work_ns"] == floor.work_ns
    # The achieved rate stays in the work's unit and its share of the peak is the work's, not the latency's.
    assert floor.throughput(2000) is not None and floor.throughput(2000)[1] == "GB/s"
    assert floor.peak_share(2000) == floor.work_ns / 2000


def test_the_latency_term_is_a_maximum_so_a_long_call_keeps_its_work_floor() -> None:
    """A sum would put real verified runs under their floor (a call's traffic overlaps its launch and drain)."""
    h100 = registry.gpus()["h100-sxm"]
    floor = floor_estimate(_spec("rms-norm"), _rms(8192, 8192), h100, operation="rms-norm")
    assert floor.work_ns > 10 * h100.min_call_ns
    assert floor.floor_ns == floor.work_ns and floor.bound == "bandwidth"
    assert "H100's measured minimum kernel time, 1.23 µs" in floor.latency_words


def test_an_unmeasured_gpu_says_it_has_no_latency_term() -> None:
    floor = floor_estimate(_spec("rms-norm"), _rms(1, 64), registry.gpus()["b200"], operation="rms-norm")
    assert floor.latency_ns is None and floor.floor_ns == floor.work_ns < 1 and floor.bound == "bandwidth"
    assert floor.latency_words.startswith("No latency term: no KernelIndex runner has measured the B200's")
    assert floor.to_json()["latency_ns"] is None
