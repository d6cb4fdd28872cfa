"""What kernel engineers type (issue 46): attention synonyms, decode/prefill, precisions, shapes, model
words, punctuation, "kernel", redundant words and misspellings — on a vocabulary built by hand, so each
rule is seen alone (the held-out set in search_heldout.tsv scores them together on the full catalog)."""

from __future__ import annotations

from kernelindex.resolve.grammar import parse_query
from kernelindex.resolve.request import ResolveRequest
from kernelindex.resolve.vocabulary import GpuEntry, OperationEntry, build_vocabulary
from kernelindex.resolve.words import dtype_matches, slug_dtypes

GQA_AXES = ("batch_size", "num_pages", "num_qo_heads", "num_kv_heads", "head_dim", "page_size")
DECODE = OperationEntry("gqa-paged-decode-h32-kv8-d128-ps64", "gqa_paged_decode_h32_kv8_d128_ps64", "gqa-paged",
                        (), GQA_AXES, constants={"num_qo_heads": 32, "num_kv_heads": 8, "head_dim": 128,
                                                 "page_size": 64})
PAGED_PREFILL = OperationEntry("gqa-paged-prefill-causal-h32-kv8-d128-ps1", "gqa_paged_prefill", "gqa-paged", (),
                               ("total_q", "num_pages", "num_qo_heads"), constants={"num_qo_heads": 32})
RAGGED = OperationEntry("gqa-ragged-prefill-causal-h32-kv8-d128", "gqa_ragged_prefill", "gqa-ragged", (),
                        ("total_q", "total_kv", "num_qo_heads"), constants={"num_qo_heads": 32})
MLA = OperationEntry("mla-paged-decode-h16-ckv512-kpe64-ps1", "mla_paged_decode", "mla-paged", (),
                     ("batch_size", "num_pages"))
MTA = OperationEntry("multi-token-attention", "Multi-token attention", "attention", (), ("batch", "seq"))
GEMM = OperationEntry("gemm-n4096-k4096", "gemm_n4096_k4096", "gemm", (), ("m", "n", "k"),
                      constants={"n": 4096, "k": 4096}, dtypes=frozenset({"fp16"}), shape=("m", "k"))
GEMM_BF16 = OperationEntry("gemm-bf16-n4096-k4096", "GEMM bf16 · N 4096 · K 4096", "gemm", (), ("m", "n", "k"),
                           constants={"n": 4096, "k": 4096}, dtypes=frozenset({"bf16"}), shape=("m", "k"))
RMS = OperationEntry("rms-norm", "RMS normalization", "normalization", ("rmsnorm",), ("rows", "hidden"),
                     shape=("rows", "hidden"))
ROPE = OperationEntry("rope", "Rotary position embedding", "positional-embedding", ("rotary",), ("seq", "hidden"))
LLAMA4_ROPE = OperationEntry("llama4-rope", "Llama-4 rotary embedding", "positional-embedding", (), ("seq",))
RELU = OperationEntry("kernelbench-1-19-relu", "KernelBench 1/19 ReLU", "activation",
                      ("kernelbench", "level 1", "problem 19", "ReLU"), ("dim",))
RELU2 = OperationEntry("kernelbench-2-1-conv2d-relu-biasadd", "KernelBench 2/1 Conv2d_ReLU_BiasAdd", "fused-pattern",
                       ("kernelbench", "ReLU"), ("batch_size",))
GPUS = [GpuEntry("h100-sxm", "H100", "NVIDIA H100 SXM", "sm_90"), GpuEntry("h200", "H200", "NVIDIA H200", "sm_90")]
VOCAB = build_vocabulary([DECODE, PAGED_PREFILL, RAGGED, MLA, MTA, GEMM, GEMM_BF16, RMS, ROPE, LLAMA4_ROPE, RELU,
                          RELU2], GPUS)


def parse(text: str):  # type: ignore[no-untyped-def]
    return parse_query(text, VOCAB)


def test_attention_names_the_serving_attention_definitions_not_the_family_called_attention() -> None:
    parsed = parse("fastest attention h200")
    assert set(parsed.operation_candidates) == {DECODE.slug, PAGED_PREFILL.slug, RAGGED.slug, MLA.slug}
    assert parsed.request.gpu == "h200" and not parsed.issues
    for phrase in ("flash attention", "flashinfer", "fa3", "attn"):
        assert MTA.slug not in parse(phrase).operation_candidates, phrase
    assert parse("multi token attention").request.operation == MTA.slug  # its own name still finds it


def test_decode_and_prefill_narrow_attention_and_batch_binds_the_definitions_axis() -> None:
    decode = parse("flash attention decode batch 64")
    assert set(decode.operation_candidates) == {DECODE.slug, MLA.slug}
    assert decode.request.axes == {"batch_size": 64} and not decode.issues
    prefill = parse("prefill attention")
    assert set(prefill.operation_candidates) == {PAGED_PREFILL.slug, RAGGED.slug}
    assert parse("mla decode").request.operation == MLA.slug
    assert set(parse("paged attention").operation_candidates) == {DECODE.slug, PAGED_PREFILL.slug, MLA.slug}


def test_sequence_words_take_the_spelling_of_the_operation_they_bind() -> None:
    assert parse("ragged prefill seq 8192").request.axes == {"total_q": 8192}
    assert parse("rope seq 2048").request.axes == {"seq": 2048}
    assert parse("gqa paged decode num_heads=32").request.axes == {"num_qo_heads": 32}


def test_fp8_int8_and_e4m3_are_precisions() -> None:
    assert parse("gemm fp8").request.dtype == "fp8"
    assert parse("gemm int8").request.dtype == "int8"
    assert parse("gemm e4m3").request.dtype == "fp8_e4m3"
    assert parse("gemm dtype:fp8").request.dtype == "fp8"
    assert dtype_matches("fp8", {"fp8_e4m3fnuz"}) and dtype_matches("fp8_e4m3", {"fp8_e4m3fnuz"})
    assert not dtype_matches("fp8", {"bf16"}) and not dtype_matches("int8", {"fp8_e4m3"})
    assert slug_dtypes("gemm-a8w8-rowwise-n1280-k8192", "GEMM A8W8, per-token × per-channel scales") == {"fp8", "int8"}
    assert slug_dtypes("gemm-a8w8-blockscale-n2048-k3072", "GEMM A8W8 fp8, block scales") == {"fp8"}


def test_a_model_narrows_attention_to_its_heads_kv_heads_and_head_size() -> None:
    llama = parse("paged attention decode llama 3.1 8b h200")  # 32 heads, 8 KV heads, head size 128
    assert llama.request.operation == DECODE.slug and not llama.issues and llama.request.gpu == "h200"
    assert set(parse("attention llama 8b").operation_candidates) == {PAGED_PREFILL.slug, DECODE.slug, RAGGED.slug}
    assert parse("mla decode deepseek v3").request.operation == MLA.slug  # 128 heads over 8 GPUs: h16
    assert parse("paged attention decode llama 3.1 70b").issues[0].code == "MODEL_WORD"  # h32-kv4 at TP 2: none here
    assert parse("rope llama 70b").issues[0].code == "MODEL_WORD"  # an operation already named: nothing to narrow
    assert parse("decode llama 8b").issues[0].code == "MODEL_WORD"  # the model's decode step: its model page


def test_a_shape_binds_the_axes_of_the_operation_it_follows() -> None:
    assert parse("gemm 128x4096x4096").request.axes == {"m": 128, "n": 4096, "k": 4096}  # M×N×K
    assert parse("gemm 4096x1024").request.axes == {"n": 4096, "k": 1024}  # N×K: the weight
    assert parse("rmsnorm 4096x1024").request.axes == {"rows": 4096, "hidden": 1024}  # its input's shape
    lone = parse("4096x1024 h100")
    (issue,) = lone.issues
    assert issue.code == "SHAPE_NOT_BOUND" and "no operation is named" in issue.message
    assert lone.request.gpu == "h100-sxm"


def test_model_words_are_named_as_ignored_with_the_reason() -> None:
    parsed = parse("paged attention decode qwen 2.5 7b h200")  # 28 heads, 4 KV heads: no definition of its shape
    (issue,) = parsed.issues
    assert issue.code == "MODEL_WORD" and issue.token == "qwen 2.5 7b"
    assert "names the model Qwen2.5 7B" in issue.message and "/models/qwen2.5-7b" in issue.message  # issue 49
    assert parsed.request.gpu == "h200" and set(parsed.operation_candidates) == {DECODE.slug, MLA.slug}
    assert [(i.code, i.token) for i in parse("gemm o_proj, qkv").issues] == [("MODEL_WORD", "o_proj qkv")]
    assert parse("llama4 rope").request.operation == LLAMA4_ROPE.slug and not parse("llama4 rope").issues
    assert parse("rope 70b").issues[0].code == "MODEL_WORD"
    assert "a model layer word" in parse("gemm o_proj").issues[0].message  # each layer is on a model's page


def test_a_question_mark_or_a_final_full_stop_never_drops_a_term() -> None:
    for text in ("rope on H100?", "rope on h100.", "rope (h100)", "rope on h100!"):
        parsed = parse(text)
        assert parsed.request.operation == "rope" and parsed.request.gpu == "h100-sxm", text
        assert not parsed.issues, text


def test_kernel_names_nothing() -> None:
    parsed = parse("kernel")
    assert parsed.operation_candidates == () and parsed.request.operation is None and not parsed.issues
    relu = parse("relu kernel")
    assert relu.operation_candidates == (RELU.slug, RELU2.slug) or relu.request.operation == RELU.slug
    assert not relu.issues


def test_a_redundant_word_does_not_make_a_complete_query_partial() -> None:
    parsed = parse("kernelbench level 1 problem 19 relu")
    assert parsed.request.operation == RELU.slug
    assert not parsed.issues


def test_a_misspelling_is_suggested_and_offered_never_picked() -> None:
    parsed = parse("rmsnrom h100")
    assert parsed.request.operation is None and parsed.request.gpu == "h100-sxm"
    assert parsed.suggested[0] == "rms-norm"
    (issue,) = parsed.issues
    assert issue.code == "UNKNOWN_WORD" and issue.suggestion == "rms-norm"
    assert parse("rope rmsnrom").suggested == ()  # another word named the operation: nothing to offer


def test_structured_precision_class_is_accepted() -> None:
    from kernelindex.resolve.request import normalise_request

    request, problems = normalise_request(ResolveRequest(operation="gemm-n4096-k4096", dtype="e4m3"), VOCAB)
    assert not problems and request.dtype == "fp8_e4m3"
    _, typo = normalise_request(ResolveRequest(operation="rmsnrom"), VOCAB)
    assert typo and typo[0].suggestion == "rms-norm"


def test_flash_words_also_name_the_flash_implementations() -> None:
    """"flash" is FlashAttention's and FlashInfer's word: it names the attention definitions and hides the
    other implementations' rows (ranks still count them); "fa3" is FlashAttention 3 alone."""
    from kernelindex.resolve.interpret import canonical_query
    from kernelindex.resolve.words import names_implementation

    flash = parse("flash attention decode")
    assert flash.request.implementation == "flash" and set(flash.operation_candidates) == {DECODE.slug, MLA.slug}
    assert "impl:flash" in canonical_query(flash.request, VOCAB)
    assert parse("fa3 decode").request.implementation == "flashattention3"
    assert parse("attention decode").request.implementation is None
    assert parse("rope impl:liger").request.implementation == "liger"
    assert names_implementation("flash", "FlashAttention-2 varlen (PyTorch) after a page gather")
    assert names_implementation("flashinfer", "flashinfer_wrapper_ad4135")
    assert not names_implementation("flash", "SDPA cuDNN backend (PyTorch) after a page gather")
