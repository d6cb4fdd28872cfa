"""The dispatch map (issue 49): a model's configuration and one step to every kernel call of the step,
per tensor-parallel rank (the vocabulary and the rules of splitting are in ``policy/dispatch.py``)."""

from __future__ import annotations

from kernelindex.domain.architectures import ModelConfig
from kernelindex.policy.dispatch import (
    PHASES,
    Candidate,
    Dispatch,
    DispatchError,
    KernelCall,
    Step,
    gemm,
    rmsnorm,
    split,
)


def dispatch(config: ModelConfig, step: Step) -> Dispatch:
    """Every kernel call of one step of ``config`` on one tensor-parallel rank."""
    if step.phase not in PHASES:
        raise DispatchError(f"phase {step.phase!r} is not one of {', '.join(PHASES)}")
    if min(step.batch, step.seq, step.tp) < 1:
        raise DispatchError("batch, seq and tp must be positive")
    t, h, d = step.tokens, config.hidden_size, step.dtype
    layers = config.num_hidden_layers
    calls = [KernelCall("embed_tokens", "embedding", 1, {"tokens": t, "vocab": config.vocab_size, "hidden": h}, (
        Candidate("embedding", {"batch": step.batch, "seq": t // step.batch, "vocab": config.vocab_size,
                                "hidden": h}, ("batch", "seq", "vocab", "hidden"), {"T": d}),),
        "the whole table on each rank (a vocabulary-parallel embedding would split it)")]
    calls.append(rmsnorm("input_layernorm", layers, t, h, d))
    calls += mla_calls(config, step) if config.mla else gqa_calls(config, step)
    calls.append(rmsnorm("post_attention_layernorm", layers, t, h, d))
    calls += dense_ffn_calls(config, step) + moe_calls(config, step)
    calls.append(rmsnorm("norm (final)", 1, t, h, d))
    head_rows = t if step.phase == "train" else step.batch
    calls.append(gemm("lm_head", 1, head_rows, split("vocab_size", config.vocab_size, step.tp), h,
                      "" if step.phase == "train" else "the last position of each sequence only"))
    if step.phase == "train":
        calls.append(KernelCall("cross_entropy", "cross-entropy", 1, {"rows": t, "vocab": config.vocab_size}, (
            Candidate("cross-entropy", {"batch": step.batch, "seq": step.seq, "vocab": config.vocab_size},
                      ("batch", "seq", "vocab"), {"T": "fp32"}),)))
    return Dispatch(tuple(calls), _notes(config, step))


def _notes(config: ModelConfig, step: Step) -> tuple[str, ...]:
    notes = []
    if step.tp > 1:
        notes.append(f"Tensor parallelism {step.tp}: each layer adds two all-reduces of {step.tokens}×"
                     f"{config.hidden_size} activations (communication, not a kernel the catalog measures; "
                     "not in the sum).")
    if config.sliding_window:
        notes.append(f"Every other layer of this model attends within a {config.sliding_window}-token sliding "
                     "window (config.json sliding_window); the map gives every layer the full context, so its "
                     "attention is an upper estimate.")
    if step.phase == "train":
        notes.append("Training: the forward calls of one step, each looked up forward+backward; optimizer "
                     "kernels are not listed.")
    return tuple(notes)


def _kv_per_rank(kv_heads: int, tp: int) -> int:
    """KV heads split across ranks, or replicated when there are fewer of them than ranks."""
    if kv_heads % tp == 0:
        return kv_heads // tp
    if tp % kv_heads == 0:
        return 1
    raise DispatchError(f"num_key_value_heads ({kv_heads}) and the tensor-parallel degree {tp} do not divide")


def _attention(step: Step, decode: str, prefill: str, decode_key: dict[str, int],
               prefill_key: dict[str, int], shape: dict[str, int], layers: int) -> KernelCall:
    if step.phase == "decode":
        pages = -(-step.seq // step.page_size)
        axes = {"batch_size": step.batch, "num_kv_indices": step.batch * pages,
                "num_pages": step.batch * pages, "len_indptr": step.batch + 1, **decode_key}
        return KernelCall("attention (decode)", "attention", layers, {**shape, "page_size": step.page_size},
                          (Candidate(decode, axes, ("batch_size", "num_kv_indices")),),
                          f"one query token per sequence over a {step.seq}-token paged KV cache")
    axes = {"total_q": step.tokens, "total_kv": step.tokens, "len_indptr": step.batch + 1, **prefill_key}
    return KernelCall("attention (prefill, causal)", "attention", layers, shape,
                      (Candidate(prefill, axes, ("total_q", "total_kv")),),
                      f"{step.batch} ragged sequences of {step.seq} tokens")


def gqa_calls(config: ModelConfig, step: Step) -> list[KernelCall]:
    t, h, n = step.tokens, config.hidden_size, config.num_hidden_layers
    heads = split("num_attention_heads", config.num_attention_heads, step.tp)
    kv, dim = _kv_per_rank(config.num_key_value_heads, step.tp), config.head_size
    rope = Candidate("rope", {"seq": t, "hidden": heads * dim, "q_heads": heads, "kv_heads": kv},
                     ("seq", "hidden", "q_heads", "kv_heads"), {"T": step.dtype})
    heads_key = {"num_qo_heads": heads, "num_kv_heads": kv, "head_dim": dim}
    shape = {"batch": step.batch, "q_heads": heads, "kv_heads": kv, "head_dim": dim,
             ("context" if step.phase == "decode" else "seq"): step.seq}
    return [
        gemm("attn.qkv_proj", n, t, (heads + 2 * kv) * dim, h),
        KernelCall("rotary_emb", "rope", n, {"tokens": t, "q_heads": heads, "kv_heads": kv, "head_dim": dim},
                   (rope,)),
        _attention(step, f"gqa-paged-decode-h{heads}-kv{kv}-d{dim}-ps{step.page_size}",
                   f"gqa-ragged-prefill-causal-h{heads}-kv{kv}-d{dim}", {**heads_key, "page_size": step.page_size},
                   heads_key, shape, n),
        gemm("attn.o_proj", n, t, h, heads * dim),
    ]


def mla_calls(config: ModelConfig, step: Step) -> list[KernelCall]:
    """DeepSeek's multi-head latent attention: low-rank Q, a compressed KV cache (kv_lora_rank) plus a shared
    RoPE key (qk_rope_head_dim); decode attends over the compressed cache (weights absorbed)."""
    t, h, n, d = step.tokens, config.hidden_size, config.num_hidden_layers, step.dtype
    heads = split("num_attention_heads", config.num_attention_heads, step.tp)
    q_rank, kv_rank = config.q_lora_rank or 0, config.kv_lora_rank or 0
    nope, pe, v = config.qk_nope_head_dim or 0, config.qk_rope_head_dim or 0, config.v_head_dim or 0
    rope = Candidate("rope", {"seq": t, "hidden": heads * pe, "q_heads": heads, "kv_heads": 1},
                     ("seq", "hidden", "q_heads", "kv_heads"), {"T": d})
    calls = [
        gemm("attn.q_a_proj", n, t, q_rank, h),
        rmsnorm("attn.q_a_layernorm", n, t, q_rank, d),
        gemm("attn.q_b_proj", n, t, heads * (nope + pe), q_rank),
        gemm("attn.kv_a_proj_with_mqa", n, t, kv_rank + pe, h),
        rmsnorm("attn.kv_a_layernorm", n, t, kv_rank, d),
        KernelCall("rotary_emb", "rope", n, {"tokens": t, "q_heads": heads, "head_dim": pe}, (rope,)),
    ]
    if step.phase != "decode":
        calls.append(gemm("attn.kv_b_proj", n, t, heads * (nope + v), kv_rank))
    shape = {"batch": step.batch, "q_heads": heads, "kv_lora_rank": kv_rank, "rope_dim": pe,
             ("context" if step.phase == "decode" else "seq"): step.seq}
    calls.append(_attention(
        step, f"mla-paged-decode-h{heads}-ckv{kv_rank}-kpe{pe}-ps{step.page_size}",
        f"mla-ragged-prefill-causal-h{heads}-qk{nope + pe}-vo{v}",
        {"num_qo_heads": heads, "head_dim_ckv": kv_rank, "head_dim_kpe": pe, "page_size": step.page_size},
        {"num_qo_heads": heads, "num_kv_heads": heads, "qk_dim": nope + pe, "vo_dim": v}, shape, n))
    calls.append(gemm("attn.o_proj", n, t, h, heads * v))
    return calls


def _swiglu(name: str, count: int, t: int, inter: int, dtype: str) -> KernelCall:
    return KernelCall(name, "swiglu", count, {"tokens": t, "intermediate": inter}, (
        Candidate("megatron-swiglu", {"seq": t, "batch": 1, "intermediate": inter},
                  ("seq", "batch", "intermediate"), {"T": dtype}),), "silu(gate) · up")


def _mlp(prefix: str, count: int, step: Step, hidden: int, inter: int) -> list[KernelCall]:
    t = step.tokens
    return [gemm(f"{prefix}.gate_up_proj", count, t, 2 * inter, hidden, "gate and up fused in one GEMM"),
            _swiglu(f"{prefix}.act_fn", count, t, inter, step.dtype),
            gemm(f"{prefix}.down_proj", count, t, hidden, inter)]


def dense_ffn_calls(config: ModelConfig, step: Step) -> list[KernelCall]:
    dense = config.num_hidden_layers - config.moe_layers
    if not dense:
        return []
    inter = split("intermediate_size", config.intermediate_size, step.tp)
    return _mlp("mlp", dense, step, config.hidden_size, inter)


def moe_calls(config: ModelConfig, step: Step) -> list[KernelCall]:
    experts, top_k, n = config.experts, config.num_experts_per_tok, config.moe_layers
    if not experts or not top_k or not n:
        return []
    t, h = step.tokens, config.hidden_size
    inter = split("the experts' intermediate size", config.moe_intermediate_size or config.intermediate_size,
                  step.tp)
    calls = [
        gemm("moe.gate (router)", n, t, experts, h, "router logits, on every rank"),
        KernelCall("moe.topk (routing)", "moe-routing", n, {"tokens": t, "experts": experts, "top_k": top_k}, (),
                   "softmax or sigmoid scores, top-k selection and weights: no catalog operation holds it alone"),
        KernelCall("moe.experts", "moe", n, {"tokens": t, "experts": experts, "top_k": top_k, "hidden": h,
                                             "intermediate": inter}, (
            Candidate("fused-moe", {"tokens": t, "experts": experts, "hidden": h, "intermediate": inter,
                                    "top_k": top_k}, ("tokens", "experts", "hidden", "intermediate", "top_k"),
                      {"T": step.dtype}),), "routed tokens through gate/up, SwiGLU and down of their experts"),
    ]
    if config.n_shared_experts:
        shared = split("the shared experts' intermediate size",
                       (config.moe_intermediate_size or config.intermediate_size) * config.n_shared_experts,
                       step.tp)
        calls += _mlp("moe.shared_experts", n, step, h, shared)
    return calls
