"""Words kernel engineers type that name no operation by itself: synonyms of operation families,
precision classes, model words, punctuation and the axis spellings of different definitions.

Tables only, and pure functions over them: the grammar (``resolve/grammar.py``) reads a query with them,
the vocabulary (``resolve/vocabulary.py``) adds the synonyms to the operation names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kernelindex import registry, urls
from kernelindex.domain.dtypes import PEAK_CLASS, canonical_dtype

# ---- punctuation --------------------------------------------------------------------------------
# A question mark, exclamation mark or parenthesis separates terms like a space, and so does a full stop that
# ends a word ("… on H100?" and "… on h100." keep the GPU); "3.1" and "fp8.e4m3" keep theirs. Same length,
# so positions still point into the original text.
_SEPARATING = re.compile(r"[,;?!()]|\.(?=\s|$)")


def separate(text: str) -> str:
    return _SEPARATING.sub(" ", text)


# ---- words that change nothing --------------------------------------------------------------------
# "kernel" is what everything here is: it names no operation (it used to match every KernelBench problem
# by its source's name). Question words of natural phrasing ("what's the fastest rope on a100?") too.
NOISE_WORDS = frozenset({
    "kernel", "kernels", "op", "ops", "operation", "operations", "impl", "implementation", "implementations",
    "what", "what's", "whats", "which", "is", "the", "a", "an", "me", "show", "find", "please", "i", "need",
    "to", "latency", "time", "perf", "performance", "benchmark", "benchmarks", "speed",
})

# ---- precision ---------------------------------------------------------------------------------
# Query spellings of a precision: a dtype (``e4m3``) or a class of dtypes (``fp8``: any fp8 format).
DTYPE_WORDS: dict[str, str] = {
    "fp8": "fp8", "float8": "fp8", "f8": "fp8", "fp4": "fp4", "float4": "fp4",
    "e4m3": "fp8_e4m3", "e4m3fn": "fp8_e4m3", "fp8e4m3": "fp8_e4m3", "fp8_e4m3fn": "fp8_e4m3",
    "float8_e4m3fn": "fp8_e4m3", "e5m2": "fp8_e5m2", "fp8e5m2": "fp8_e5m2", "float8_e5m2": "fp8_e5m2",
    "e4m3fnuz": "fp8_e4m3fnuz", "e2m1": "float4_e2m1fn_x2", "i8": "int8", "w8a8": "fp8",
}
DTYPE_CLASSES = frozenset({"fp8", "fp4"})
# dtype words inside an operation's slug (aiter's ``gemm-a8w8-…``, FlashInfer's ``gemm-fp8-fp4-…``)
_SLUG_DTYPES: dict[str, tuple[str, ...]] = {
    "bf16": ("bf16",), "fp16": ("fp16",), "fp32": ("fp32",), "fp8": ("fp8",), "a8w8": ("fp8", "int8"),
    "int8": ("int8",), "i8": ("int8",), "fp4": ("fp4",), "mxfp4": ("fp4",), "nvfp4": ("fp4",), "a4w4": ("fp4",),
    "e4m3": ("fp8_e4m3",), "mxfp8": ("fp8",), "afp8e4m3fnuz": ("fp8",), "afp8e4m3": ("fp8",), "abf16": ("bf16",),
}
NARROW = frozenset({"fp8", "fp4", "int8", "int4"})


def query_dtype(word: str) -> str | None:
    """``bf16`` → bf16, ``e4m3`` → fp8_e4m3, ``fp8`` → fp8 (the class); None when not a precision."""
    key = word.strip().lower()
    return DTYPE_WORDS.get(key) or canonical_dtype(key)


def dtype_class(dtype: str) -> str:
    """fp8_e4m3fnuz → fp8, nvfp4 → fp4, int8 → int8."""
    return PEAK_CLASS.get(dtype, dtype)


def dtype_matches(requested: str, observed: Iterable[str]) -> bool:
    """A requested dtype or class among a run's (or an operation's) dtypes: ``fp8`` takes every fp8
    format, ``fp8_e4m3`` takes AMD's fnuz variant of it too."""
    for seen in observed:
        if seen == requested or dtype_class(seen) == requested or seen.removesuffix("fnuz") == requested:
            return True
    return False


def slug_dtypes(slug: str, title: str = "") -> frozenset[str]:
    """The precisions an operation's slug and title name (``gemm-bf16-n4096-k4096`` → bf16). aiter's A8W8 is
    fp8 or int8, unless the title says which ("GEMM A8W8 fp8, block scales")."""
    words = set(slug.split("-")) | set(re.split(r"[^a-z0-9]+", title.lower()))
    named = {d for part in words for d in _SLUG_DTYPES.get(part, ())}
    explicit = words & {"fp8", "int8"}
    if "a8w8" in words and len(explicit) == 1:
        named -= {"fp8", "int8"} - explicit
    return frozenset(named)


def is_narrow(dtypes: Iterable[str]) -> bool:
    return any(dtype_class(d) in NARROW for d in dtypes)


# ---- models ------------------------------------------------------------------------------------
# A model, its size or one of its layers. They choose no single operation's shapes, so they are named as
# ignored (code MODEL_WORD) with the reason and, for a model the registry ships, its model page (issue 49).
MODEL_NAMES = frozenset({
    "llama", "llama2", "llama3", "llama-3", "llama3.1", "llama3.2", "llama3.3", "mistral", "mixtral", "qwen",
    "qwen2", "qwen2.5", "qwen3", "deepseek", "deepseek-v3", "deepseek-r1", "gpt", "gpt2", "gpt-oss", "gemma",
    "gemma2", "gemma3", "phi", "phi3", "falcon", "kimi", "grok", "olmo", "scout", "maverick", "r1", "v3",
})
MODEL_LAYERS = frozenset({
    "o_proj", "qkv", "qkv_proj", "q_proj", "k_proj", "v_proj", "gate_proj", "up_proj", "down_proj",
    "gate_up_proj", "lm_head", "attn.o_proj", "mlp.down_proj", "mlp.gate_up_proj",
})
# 8b, 1.5b, a3b (active parameters), 8x7b; not 1m or 2k, which are axis shorthands (seq 2k)
_MODEL_SIZE = re.compile(r"^\d+(\.\d+)?b$|^a\d+b$|^\d+x\d+b$")
_MODEL_VERSION = re.compile(r"^v?\d+(\.\d+)?$")
def model_word_reason(text: str) -> str:
    """Why the model words ``text`` are ignored, naming the model page that answers them when there is one."""
    slug = registry.model_slug(text)
    if slug is not None:
        title = registry.model_definitions()[slug].title
        return (f"'{text}' names the model {title}, which chooses no single operation's shapes: every kernel of "
                f"one of its steps, with shapes and the best known implementations, is on its model page "
                f"{urls.model(slug)} (ki model {slug})")
    layers = " layer" if all(part in MODEL_LAYERS for part in text.lower().split()) else ""
    return (f"'{text}' is a model{layers} word: it does not choose one operation's shapes — name the operation "
            f"and its axes, or open a model's page ({urls.MODELS}) where each layer is mapped to its kernel")


def model_word(word: str, after_model: bool = False) -> bool:
    """A model's name, size (8b, 70b, a3b), layer (o_proj, qkv) or, right after a model word, its version."""
    key = word.strip().lower()
    if key in MODEL_NAMES or key in MODEL_LAYERS or _MODEL_SIZE.match(key):
        return True
    return after_model and bool(_MODEL_VERSION.match(key))


# ---- operation synonyms ----------------------------------------------------------------------------
# What kernel engineers call the attention that serves LLMs: FlashInfer-Bench's GQA and MLA definitions
# over paged or ragged KV caches (decode and prefill). A phrase here names the operations of these
# families whose slugs hold every required word; "attention" alone names them before the family
# literally called "attention" (Liger's multi-token and neighborhood attention keep their own names).
SERVING_ATTENTION = ("gqa-paged", "gqa-ragged", "mla-paged", "mla-ragged")
SYNONYMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "attention": (SERVING_ATTENTION, ()),
    "attn": (SERVING_ATTENTION, ()),
    "flash attention": (SERVING_ATTENTION, ()),
    "flash attn": (SERVING_ATTENTION, ()),
    "flash": (SERVING_ATTENTION, ()),
    "flashattention": (SERVING_ATTENTION, ()),
    "flashattention2": (SERVING_ATTENTION, ()),
    "flashattention3": (SERVING_ATTENTION, ()),
    "fa2": (SERVING_ATTENTION, ()),
    "fa3": (SERVING_ATTENTION, ()),
    "flashinfer": (SERVING_ATTENTION, ()),
    "sdpa": (SERVING_ATTENTION, ()),
    "paged attention": (("gqa-paged", "mla-paged"), ()),
    "pagedattention": (("gqa-paged", "mla-paged"), ()),
    "flash decoding": (("gqa-paged", "mla-paged"), ("decode",)),
    "flashdecoding": (("gqa-paged", "mla-paged"), ("decode",)),
    "decoding": (SERVING_ATTENTION, ("decode",)),
    "gqa": (("gqa-paged", "gqa-ragged"), ()),
    "grouped query attention": (("gqa-paged", "gqa-ragged"), ()),
    "mla": (("mla-paged", "mla-ragged", "mla-attention"), ()),
    "multi head latent attention": (("mla-paged", "mla-ragged", "mla-attention"), ()),
    "varlen": (("gqa-ragged", "mla-ragged"), ()),
    "matmul": (("gemm",), ()),
    "mm": (("gemm",), ()),
}


# A synonym that also names implementations: the answer hides the other rows (ranks still count them).
# "flash" is FlashAttention's and FlashInfer's word; "fa3" is FlashAttention 3 alone.
IMPLEMENTATION_OF: dict[str, str] = {
    "flash": "flash", "flashattention": "flash", "flashattn": "flash", "flashdecoding": "flash",
    "flashattention2": "flashattention2", "fa2": "flashattention2", "flashattention3": "flashattention3",
    "fa3": "flashattention3", "flashinfer": "flashinfer",
}


def names_implementation(wanted: str, *names: str | None) -> bool:
    """``flash`` names "FlashAttention-2 varlen (PyTorch) …" and "flashinfer_wrapper_ad4135"."""
    key = re.sub(r"[\s_\-./:+()]+", "", wanted.lower())
    return any(key in re.sub(r"[\s_\-./:+()]+", "", name.lower()) for name in names if name)


def synonym_slugs(families: dict[str, str], phrase: str) -> list[str]:
    """The slugs a synonym phrase names, given each operation's family (slug → family)."""
    wanted, words = SYNONYMS[phrase]
    return [slug for slug, family in families.items()
            if family in wanted and all(w in slug.split("-") for w in words)]


# ---- axes ----------------------------------------------------------------------------------------
# One quantity, the spellings different definitions give it (Liger's ``batch``, FlashInfer's
# ``batch_size``, GPU MODE's ``batchsize``): a bound axis takes the spelling of the operation it binds.
AXIS_CLASSES: tuple[tuple[str, ...], ...] = (
    ("batch", "batch_size", "batchsize"),
    ("seq", "seq_len", "seqlen", "sequence_length", "total_q"),
    ("hidden", "hidden_size", "hidden_dim", "dim"),
    ("q_heads", "num_qo_heads", "num_heads", "n_heads", "heads"),
    ("kv_heads", "num_kv_heads"),
)


def axis_spellings(name: str) -> tuple[str, ...]:
    """The spellings of the quantity ``name`` is one spelling of (itself alone when it has no class)."""
    return next((c for c in AXIS_CLASSES if name in c), (name,))


def spelled_for(name: str, axes: Iterable[str]) -> str | None:
    """How an operation with these axes spells the quantity ``name``: itself, else the first of its class."""
    axes = tuple(axes)
    if name in axes:
        return name
    return next((a for a in axis_spellings(name) if a in axes), None)
