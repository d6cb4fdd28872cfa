"""qwen2vl-mrope on the CPU: inputs honour the case (q/k views of [1, seq, heads, d] storage, three distinct
rotary tables), the float64 reference is rope when the streams agree and takes each column from its stream,
it agrees with Transformers' Qwen2-VL M-RoPE in value and gradient where Transformers installs, a wrong
gradient and an undeclared in-place write are caught, and the backward floor reads only cos/sin."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from op_cases import ROPE_ORDER, assert_inputs_honour_case, fresh_inputs, op, small_workload  # noqa: E402

from kernelindex import registry  # noqa: E402
from kernelindex.runner.correctness import check  # noqa: E402
from kernelindex.runner.definitions import REGIONS  # noqa: E402

MROPE = {"seq": 8, "hidden": 64, "q_heads": 4, "kv_heads": 2}  # head_dim 16: sections [2, 3, 3]


def _mrope(dtype: str = "fp32"):  # noqa: ANN202
    return small_workload("qwen2vl-mrope", MROPE, dtype, ROPE_ORDER)


def _check(workload, bind, *, in_place: bool = False):  # noqa: ANN001, ANN202
    return check(registry.load_operation("qwen2vl-mrope"), workload, op("qwen2vl-mrope"), bind, in_place=in_place,
                 device="cpu", gradients=True)


class _Doubled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):  # noqa: ANN001, ANN205
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):  # noqa: ANN001, ANN205
        return grad * 2


def test_adapters_name_the_catalog_lines() -> None:
    definition = op("qwen2vl-mrope")
    assert definition.regions == REGIONS and definition.unavailable is None and definition.overwrites == ("q", "k")
    adapters = definition.adapters()
    assert [a.line for a in adapters] == ["transformers-qwen2vl-mrope", "liger-kernel-qwen2vl-mrope",
                                          "torch-compile-qwen2vl-mrope"]
    catalog_lines = registry.source_mapping("liger")["implementations"]
    assert adapters[0].line in catalog_lines and adapters[1].line in catalog_lines
    assert "apply_multimodal_rotary_pos_emb" in adapters[0].description  # why the symbol differs from the source's
    assert adapters[1].in_place and not adapters[0].in_place


def test_mrope_inputs_follow_the_case_with_three_distinct_streams() -> None:
    inputs = assert_inputs_honour_case("qwen2vl-mrope", _mrope())
    cos = inputs["cos"]
    assert not torch.equal(cos[0], cos[1]) and not torch.equal(cos[1], cos[2])
    half = cos.shape[-1] // 2
    assert torch.equal(cos[..., :half], cos[..., half:])  # real rotary tables: cat(freqs, freqs)


def test_mrope_with_equal_streams_is_rope() -> None:
    from kernelindex.runner.ops import rope

    x = fresh_inputs("qwen2vl-mrope", _mrope("fp64"))
    for name in ("cos", "sin"):
        x[name] = x[name][:1].expand(3, -1, -1, -1).clone()
    got = op("qwen2vl-mrope").reference(x)
    want = rope.reference({"q": x["q"], "k": x["k"], "cos": x["cos"][0], "sin": x["sin"][0]})
    assert torch.allclose(got["q_out"], want["q_out"]) and torch.allclose(got["k_out"], want["k_out"])


def test_mrope_takes_each_column_from_its_stream() -> None:
    """head_dim 16: sections [2, 3, 3] — columns 2–4 and 10–12 rotate with the height stream only."""
    x = fresh_inputs("qwen2vl-mrope", _mrope("fp64"))
    before = op("qwen2vl-mrope").reference(x)["q_out"]
    x["cos"], x["sin"] = x["cos"].clone(), x["sin"].clone()
    x["cos"][1], x["sin"][1] = x["cos"][2], x["sin"][2]
    changed = (op("qwen2vl-mrope").reference(x)["q_out"] - before).abs().amax(dim=(0, 1, 2)) > 0
    assert changed.nonzero().flatten().tolist() == [2, 3, 4, 10, 11, 12]


def test_mrope_baseline_matches_the_reference_where_transformers_installs() -> None:
    baseline = op("qwen2vl-mrope").adapters()[0]
    if baseline.missing() is not None:
        pytest.skip(baseline.missing() or "")
    for dtype in ("fp32", "bf16"):
        result = _check(_mrope(dtype), baseline.bind)
        assert result.passed and result.gradient_passed, result.detail or result.gradient_detail


def test_mrope_wrong_gradient_and_in_place_writes() -> None:
    from kernelindex.runner.ops.mrope import interleaved
    from kernelindex.runner.ops.rope import rotate_half

    def rotate(t: torch.Tensor, x: dict) -> torch.Tensor:
        cos, sin = interleaved(x["cos"]), interleaved(x["sin"])
        return t * cos + rotate_half(t) * sin

    def wrong_k(x: dict) -> object:
        return lambda: {"q_out": rotate(x["q"], x), "k_out": rotate(_Doubled.apply(x["k"]), x)}

    def writes_q(x: dict) -> object:
        def call() -> dict:
            out = {"q_out": rotate(x["q"].detach(), x), "k_out": rotate(x["k"], x)}
            with torch.no_grad():
                x["q"].copy_(out["q_out"])
            return out
        return call

    wrong = _check(_mrope(), wrong_k)
    assert wrong.passed and wrong.gradient_passed is False and "gradient of k" in wrong.gradient_detail
    assert _check(_mrope(), writes_q, in_place=True).mutated_inputs == ["q"]
    assert "mutated input q" in _check(_mrope(), writes_q).detail


def test_backward_floor_reads_only_the_tables_and_upstream_gradients() -> None:
    from kernelindex.policy.traffic import compulsory_traffic

    spec = registry.load_operation("qwen2vl-mrope").model_dump(mode="json")["spec"]
    traffic = compulsory_traffic(spec, _mrope().spec.model_dump(mode="json"), "backward", "qwen2vl-mrope")
    assert {t.name for t in traffic if t.direction == "read"} == {
        "upstream gradient of q_out", "upstream gradient of k_out", "cos", "sin"}
    assert {t.name for t in traffic if t.direction == "write"} == {"gradient of q", "gradient of k"}
