"""What words a query can use: operations and their aliases, GPUs, dtypes, languages, modes, keys.

Built from the registry (operation specs, GPU datasheet table), so the parser needs no database.
Matching is on a normalised form (lower case, separators removed) so that ``layer norm``,
``layer-norm`` and ``LayerNorm`` are one name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from kernelindex import registry
from kernelindex.domain.dtypes import DTYPE_ALIASES, DTYPE_BYTES, canonical_dtype
from kernelindex.domain.manifests import OperationSpec
from kernelindex.domain.titles import operation_title
from kernelindex.resolve.words import SYNONYMS, slug_dtypes, synonym_slugs

_SEPARATORS = re.compile(r"[\s_\-./:+()]+")

# Evidence levels in increasing order of trust; a ``trust:`` filter keeps this level and above.
TRUST_LEVELS: tuple[str, ...] = ("reported", "reproducible", "verified", "replicated")
LANGUAGES: tuple[str, ...] = (
    "triton", "cuda", "python", "c++", "cutlass", "cute", "cute-dsl", "cutile", "tilelang", "mojo"
)
MODES: dict[str, str] = {
    "forward": "forward", "fwd": "forward", "fw": "forward", "inference": "forward",
    "backward": "backward", "bwd": "backward", "bw": "backward",
    "full": "forward+backward", "forward+backward": "forward+backward", "fwd+bwd": "forward+backward",
    "fwdbwd": "forward+backward", "forwardbackward": "forward+backward", "training": "forward+backward",
    "forward-no-grad": "forward-no-grad", "no-grad-forward": "forward-no-grad", "no-grad": "forward-no-grad",
    "nograd": "forward-no-grad",
}
BOOLEANS: dict[str, bool] = {"yes": True, "true": True, "1": True, "y": True, "no": False, "false": False, "0": False,
                             "n": False}

# Filter keys (besides axis names) and the spellings users write for them.
KEYS: tuple[str, ...] = ("op", "gpu", "arch", "dtype", "lang", "impl", "trust", "usable", "license", "source", "mode")
KEY_ALIASES: dict[str, str] = {
    "operation": "op", "kernel": "op", "device": "gpu", "hardware": "gpu", "architecture": "arch", "sm": "arch",
    "precision": "dtype", "type": "dtype", "language": "lang", "evidence": "trust", "level": "trust",
    "usability": "usable", "licence": "license", "protocol": "mode", "pass": "mode", "direction": "mode",
    "implementation": "impl", "provider": "impl", "library": "impl",
}
# Axis names as benchmark scripts and model configs spell them.
AXIS_ALIASES: dict[str, str] = {
    "seq_len": "seq", "seqlen": "seq", "sequence": "seq", "tokens": "seq", "hidden_size": "hidden",
    "d_model": "hidden", "dim": "hidden", "vocab_size": "vocab", "batch_size": "batch", "bs": "batch",
    "num_q_heads": "q_heads", "num_heads": "q_heads", "num_kv_heads": "kv_heads",
}


def normalise(text: str) -> str:
    return _SEPARATORS.sub("", text.strip().lower())


@dataclass(frozen=True)
class OperationEntry:
    slug: str
    title: str
    family: str
    aliases: tuple[str, ...]
    axes: tuple[str, ...]
    derived: Mapping[str, str] = field(default_factory=dict)
    # Axes the operation fixes (role constant with a value), e.g. FlashInfer's num_qo_heads = 32:
    # a query binding them picks among operations that differ only there.
    constants: Mapping[str, int] = field(default_factory=dict)
    # The precisions the definition fixes: its first input's dtype when not a type variable, and those its
    # slug names (aiter's gemm-a8w8-…: fp8 and int8). Empty when a workload binds it (Liger's T).
    dtypes: frozenset[str] = frozenset()
    # The axes of its first input's shape, in order (rms-norm: rows, hidden): what ``4096x1024`` binds.
    shape: tuple[str, ...] = ()


@dataclass(frozen=True)
class GpuEntry:
    slug: str
    short: str
    name: str
    architecture: str
    match: tuple[str, ...] = ()


@dataclass(frozen=True)
class NameHit:
    slug: str
    how: str  # slug | synonym | alias | title | family


@dataclass(frozen=True)
class Vocabulary:
    operations: Mapping[str, OperationEntry]
    gpus: Mapping[str, GpuEntry]
    operation_names: Mapping[str, tuple[NameHit, ...]]
    gpu_names: Mapping[str, str]
    axis_names: frozenset[str]
    max_name_words: int

    def operation_hits(self, phrase: str) -> tuple[NameHit, ...]:
        return self.operation_names.get(normalise(phrase), ())

    def gpu(self, word: str) -> str | None:
        return self.gpu_names.get(normalise(word))

    def architectures(self) -> frozenset[str]:
        return frozenset(g.architecture for g in self.gpus.values())


_HOW_ORDER = {"slug": 0, "synonym": 1, "alias": 2, "title": 3, "family": 4}
# A word that names a family means the family: another operation's alias of the same word ranks after it.
# KernelBench lists each word of a problem's name as an alias ("Gemm" of level 2's Gemm_Multiply_LeakyReLU, a
# fused pattern), so without this "gemm" would pick those problems instead of the GEMM family.
# A synonym (resolve/words.py: "attention" means the serving attention definitions, "matmul" the GEMM family)
# is curated, so it ranks before the data's aliases, titles and literal families.
_FAMILY_WORD_ORDER = {"slug": 0, "synonym": 1, "title": 2, "family": 3, "alias": 4}


def build_vocabulary(operations: Iterable[OperationEntry], gpus: Iterable[GpuEntry]) -> Vocabulary:
    names: dict[str, dict[str, str]] = {}
    ops = {op.slug: op for op in operations}
    families = {normalise(op.family) for op in ops.values()}

    def rank(key: str, how: str) -> int:
        return (_FAMILY_WORD_ORDER if key in families else _HOW_ORDER)[how]

    def add(phrase: str, slug: str, how: str) -> None:
        key = normalise(phrase)
        if not key:
            return
        seen = names.setdefault(key, {})
        if slug not in seen or rank(key, how) < rank(key, seen[slug]):
            seen[slug] = how

    max_words = 1
    for op in ops.values():
        for phrase, how in [(op.slug, "slug"), (op.title, "title"), (op.family, "family")] + [
            (a, "alias") for a in op.aliases
        ]:
            add(phrase, op.slug, how)
            max_words = max(max_words, len(_SEPARATORS.split(phrase.strip())))
    family_of = {op.slug: op.family for op in ops.values()}
    for phrase in SYNONYMS:
        for slug in synonym_slugs(family_of, phrase):
            add(phrase, slug, "synonym")
    operation_names = {
        key: tuple(sorted((NameHit(s, h) for s, h in hits.items()), key=lambda n: (hits_rank[n.how], n.slug)))
        for key, hits in names.items()
        for hits_rank in [_FAMILY_WORD_ORDER if key in families else _HOW_ORDER]
    }
    gpu_entries = {g.slug: g for g in gpus}
    gpu_names = {key: slug for key, slug in registry.gpu_aliases().items() if slug in gpu_entries}
    for g in gpu_entries.values():  # GPUs outside the registry (tests build their own vocabularies)
        for phrase in (g.short, g.slug, g.name, *g.match):
            gpu_names.setdefault(normalise(phrase), g.slug)
    axis_names = frozenset(a for op in ops.values() for a in op.axes)
    return Vocabulary(ops, gpu_entries, operation_names, gpu_names, axis_names, min(max_words, 5))


def operation_entry(slug: str, manifest: OperationSpec) -> OperationEntry:
    """The vocabulary's entry of an operation, from its spec (the registry's copy)."""
    return operation_entry_json(slug, manifest.model_dump(mode="json", include={"metadata", "spec"}))


def operation_entry_json(slug: str, manifest: Mapping[str, Any]) -> OperationEntry:
    """The vocabulary's entry of an operation from its manifest's JSON (as the catalog stores it: validated
    when it was written), so a query reads the fields it names without validating 1,300 manifests again."""
    metadata, spec = manifest.get("metadata") or {}, manifest["spec"]
    axes: Mapping[str, Mapping[str, Any]] = spec["axes"]
    written = metadata.get("title")
    title = operation_title(written, slug)
    aliases = tuple(metadata.get("aliases") or ()) + ((written,) if written and written != title else ())
    first = spec["inputs"][0] if spec.get("inputs") else None
    fixed = canonical_dtype(first["dtype"]) if first else None
    return OperationEntry(
        slug=slug, title=title, family=spec["family"], aliases=aliases, axes=tuple(axes),
        derived={n: e for n, a in axes.items() if a["role"] == "derived" and (e := a.get("expression")) is not None},
        constants={n: int(e) for n, a in axes.items()
                   if a["role"] == "constant" and (e := a.get("expression")) is not None and e.isdigit()},
        dtypes=slug_dtypes(slug, metadata.get("title") or "") | ({fixed} if fixed else set()),
        shape=tuple(str(d) for d in first["shape"] if str(d) in axes) if first else (),
    )


@cache
def registry_vocabulary() -> Vocabulary:
    operations = [operation_entry(slug, manifest) for slug, manifest in registry.operations().items()]
    gpus = [GpuEntry(g.slug, g.short, g.name, g.architecture, tuple(g.match)) for g in registry.gpus().values()]
    return build_vocabulary(operations, gpus)


def dtype_words() -> frozenset[str]:
    return frozenset(DTYPE_BYTES) | frozenset(DTYPE_ALIASES)
