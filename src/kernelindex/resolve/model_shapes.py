"""A model word narrows the attention operations to the model's attention shape.

A model chooses no single operation's shapes in general (``words.model_word_reason``), but the serving-attention
definitions (FlashInfer-Bench's GQA and MLA, paged or ragged) fix their heads, KV heads and head size in the slug:
``gqa-paged-decode-h32-kv8-d128-ps64`` is Llama 3.1 8B's attention on one GPU. So "paged attention decode llama 8b"
keeps the decode definitions of that shape: the model's own heads, or its heads split by tensor parallelism over
2, 4 or 8 GPUs (Llama 3.1 70B's 64 heads and 8 KV heads are ``h32-kv4`` at TP 2). Only when the query says
attention ("llama 3.1 8b decode" asks for the model's decode step, every kernel of it: its model page answers
that). Where no candidate has the shape, the word stays an issue, with its model page.
"""

from __future__ import annotations

from kernelindex import registry
from kernelindex.domain.architectures import ModelConfig
from kernelindex.resolve.parse_state import State, Word
from kernelindex.resolve.tokens import Token
from kernelindex.resolve.words import SERVING_ATTENTION, SYNONYMS

TENSOR_PARALLEL = (1, 2, 4, 8)
ATTENTION_PREFIXES = ("gqa-", "mla-")
# What says attention, from the synonyms that name the serving-attention families (not "decode" alone, which
# names a model's step) and those families' own words (gqa, mla, paged, ragged).
ATTENTION_WORDS = tuple(sorted({word for word, (families, modes) in SYNONYMS.items()
                                if families == SERVING_ATTENTION and not modes}
                               | {part for family in SERVING_ATTENTION for part in family.split("-")}))


def attention_markers(config: ModelConfig) -> dict[str, int]:
    """The slug parts of the model's attention shape → the tensor-parallel degree that gives it."""
    heads, kv = config.num_attention_heads, config.num_key_value_heads
    markers: dict[str, int] = {}
    for tp in TENSOR_PARALLEL:
        if heads % tp:
            continue
        if config.mla:
            marker = f"h{heads // tp}-ckv{config.kv_lora_rank}-kpe{config.qk_rope_head_dim}"
        elif kv % tp == 0:
            marker = f"h{heads // tp}-kv{kv // tp}-d{config.head_size}"
        else:
            continue
        markers.setdefault(marker, tp)
    return markers


def narrow_to_model(state: State) -> None:
    """Keep the attention candidates of a named model's shape; the model word then reads as part of the name."""
    if "operation" in state.values or not state.candidates or not _says_attention(state):
        return
    for word in state.model_words:
        slug = registry.model_slug(word.text)
        if slug is None:
            continue
        markers = attention_markers(registry.model_definitions()[slug].config)
        kept = tuple(c for c in state.candidates if c.startswith(ATTENTION_PREFIXES)
                     and any(f"-{m}-" in f"{c}-" for m in markers))
        if kept:
            _understood(state, word, kept)
            return


def _says_attention(state: State) -> bool:
    named = " ".join(t.text.lower() for t in state.tokens if t.kind == "operation")
    return any(word in named for word in ATTENTION_WORDS)


def _understood(state: State, word: Word, kept: tuple[str, ...]) -> None:
    state.issues = [i for i in state.issues if (i.start, i.code) != (word.start, "MODEL_WORD")]
    state.tokens = [t for t in state.tokens if (t.start, t.kind) != (word.start, "issue")]
    if len(kept) == 1:
        state.candidates = ()
        state.set(word, "operation", kept[0])
        return
    state.candidates = kept
    state.tokens.append(Token(word.text, word.start, word.end, "operation", None))
