"""The dispatch map (issue 49): every call of one step with shapes recomputed here from the architecture
numbers, and the GEMMs' N and K equal to the FlashInfer-Bench definitions the catalog holds for the model."""

from __future__ import annotations

import re

import pytest

from kernelindex import registry
from kernelindex.policy.dispatch import DispatchError, Step
from kernelindex.policy.dispatch_map import dispatch


def _calls(slug: str, step: Step) -> dict[str, object]:
    return {c.name: c for c in dispatch(registry.model_definitions()[slug].config, step).calls}


def test_llama_8b_decode_lists_every_call_with_shapes_from_the_config() -> None:
    c = registry.model_definitions()["llama-3.1-8b"].config
    hidden, heads, kv, inter, layers = (c.hidden_size, c.num_attention_heads, c.num_key_value_heads,
                                        c.intermediate_size, c.num_hidden_layers)
    head = hidden // heads
    calls = _calls("llama-3.1-8b", Step("decode", 32, 4096, 1))
    assert list(calls) == ["embed_tokens", "input_layernorm", "attn.qkv_proj", "rotary_emb", "attention (decode)",
                           "attn.o_proj", "post_attention_layernorm", "mlp.gate_up_proj", "mlp.act_fn",
                           "mlp.down_proj", "norm (final)", "lm_head"]
    expected = {"attn.qkv_proj": (32, (heads + 2 * kv) * head, hidden), "attn.o_proj": (32, hidden, heads * head),
                "mlp.gate_up_proj": (32, 2 * inter, hidden), "mlp.down_proj": (32, hidden, inter),
                "lm_head": (32, c.vocab_size, hidden)}
    for name, (m, n, k) in expected.items():
        assert dict(calls[name].shape) == {"M": m, "N": n, "K": k}, name
        assert calls[name].candidates[0].operation == f"gemm-n{n}-k{k}"
        assert calls[name].count == (1 if name == "lm_head" else layers)
    attention = calls["attention (decode)"]
    assert attention.candidates[0].operation == "gqa-paged-decode-h32-kv8-d128-ps1"
    assert attention.candidates[0].axes["num_kv_indices"] == 32 * 4096
    assert calls["input_layernorm"].candidates[0].operation == "rmsnorm-h4096"
    assert dict(calls["mlp.act_fn"].shape) == {"tokens": 32, "intermediate": inter}


def _captured_from(model: str) -> dict[str, tuple[int, int]]:
    """The registry's FlashInfer-Bench GEMM definitions that say which layer of ``model`` they were captured
    from: layer name → (N, K)."""
    found = {}
    for slug in registry.operations():
        spec = registry.load_operation(slug)
        words = re.search(rf"Captured from {re.escape(model)} ([\w.]+)", spec.metadata.description or "")
        if spec.spec.family == "gemm" and words:
            axes = spec.spec.axes
            found[words.group(1).rstrip(".")] = (int(axes["n"].expression), int(axes["k"].expression))
    return found


@pytest.mark.parametrize(("model", "slug"), [("Llama 3.1 8B", "llama-3.1-8b"), ("DeepSeek-V3", "deepseek-v3")])
def test_gemm_n_and_k_equal_the_flashinfer_definitions_of_the_model(model: str, slug: str) -> None:
    captured = _captured_from(model)
    assert captured, f"the registry holds FlashInfer-Bench GEMMs captured from {model}"
    calls = _calls(slug, Step("decode", 16, 1024, 1))
    for layer, (n, k) in captured.items():
        call = next(c for name, c in calls.items() if name.startswith(layer))
        assert (call.shape["N"], call.shape["K"]) == (n, k), layer
        assert call.candidates[0].operation == f"gemm-n{n}-k{k}"


def test_tensor_parallelism_splits_heads_and_intermediate_per_rank() -> None:
    calls = _calls("llama-3.1-70b", Step("decode", 8, 2048, 8))
    assert dict(calls["attn.qkv_proj"].shape) == {"M": 8, "N": (64 // 8 + 2 * 1) * 128, "K": 8192}
    assert dict(calls["attn.o_proj"].shape) == {"M": 8, "N": 8192, "K": 64 // 8 * 128}
    assert dict(calls["mlp.down_proj"].shape) == {"M": 8, "N": 8192, "K": 28672 // 8}
    assert calls["attention (decode)"].candidates[0].operation == "gqa-paged-decode-h8-kv1-d128-ps1"
    with pytest.raises(DispatchError, match="not divisible by the tensor-parallel degree 3"):
        dispatch(registry.model_definitions()["llama-3.1-8b"].config, Step("decode", 1, 1, 3))


def test_prefill_processes_whole_sequences_and_the_lm_head_only_the_last_position() -> None:
    calls = _calls("qwen2.5-7b", Step("prefill", 2, 1024, 1))
    assert calls["attn.qkv_proj"].shape["M"] == 2048 and calls["lm_head"].shape["M"] == 2
    attention = calls["attention (prefill, causal)"].candidates[0]
    assert attention.operation == "gqa-ragged-prefill-causal-h28-kv4-d128" and attention.axes["total_q"] == 2048
    train = _calls("qwen2.5-7b", Step("train", 2, 1024, 1))
    assert train["lm_head"].shape["M"] == 2048 and "cross_entropy" in train


def test_moe_and_mla_layers() -> None:
    calls = _calls("deepseek-v3", Step("decode", 32, 4096, 8))
    assert calls["mlp.gate_up_proj"].count == 3 and calls["moe.experts"].count == 58
    experts = calls["moe.experts"].candidates[0]
    assert experts.operation == "fused-moe" and dict(experts.axes) == {
        "tokens": 32, "experts": 256, "hidden": 7168, "intermediate": 2048 // 8, "top_k": 8}
    assert calls["attention (decode)"].candidates[0].operation == "mla-paged-decode-h16-ckv512-kpe64-ps1"
    assert calls["moe.topk (routing)"].candidates == ()  # named, with no operation to look up
    mixtral = _calls("mixtral-8x7b", Step("decode", 32, 4096, 1))
    assert mixtral["moe.gate (router)"].shape["N"] == 8 and "mlp.gate_up_proj" not in mixtral


def test_a_gemm_the_catalog_does_not_define_still_has_its_floor() -> None:
    from kernelindex.readmodel.model_calls import gemm_floor

    step = Step("decode", 32, 4096, 1)
    head = _calls("llama-3.1-8b", step)["lm_head"]
    floor, floor_ns = gemm_floor(head, step, registry.gpus()["h200"])
    m, n, k = 32, 128256, 4096
    assert floor is not None and floor["bytes_total"] == 2 * (m * k + n * k + m * n)  # fp16 A, B read; C written
    assert floor["flops"] == 2 * m * n * k and floor_ns == max(floor["memory_ns"], floor["compute_ns"])
