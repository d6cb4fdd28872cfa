"""Titles people read, for the names sources gave as identifiers (issue 46 item 7): FlashInfer-Bench titles its
definitions with their ids (``gqa_paged_decode_h32_kv8_d128_ps1``), GPU MODE its submissions with the
leaderboard's id (``matmul_v2 · submission 780718``). The stored manifests keep what the source wrote (their
digests depend on it); pages, the API, the CLI and MCP show these instead."""

from __future__ import annotations

import re

_IDENTIFIER = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
_PARAMETER = re.compile(r"(h|kv|d|ps|n|k|g|ckv|kpe|qk|vo)(\d+)")
_PARAMETERS = {"h": "{} heads", "kv": "{} KV heads", "d": "head dim {}", "ps": "page size {}", "n": "N {}",
               "k": "K {}", "g": "{} groups", "ckv": "compressed KV {}", "kpe": "RoPE key dim {}", "qk": "QK dim {}",
               "vo": "VO dim {}"}
_WORDS = {"gemm": "GEMM", "gqa": "GQA", "mla": "MLA", "rmsnorm": "RMSNorm", "add": "add +", "m": "M-"}
_SUBMISSION = re.compile(r"[A-Za-z0-9_.-]+ · submission (\d+)")


def operation_title(title: str | None, slug: str) -> str:
    """``gqa_paged_decode_h32_kv8_d128_ps1`` → ``GQA paged decode · 32 heads · 8 KV heads · head dim 128 · page
    size 1``; a title that is not an identifier is kept as written (none: the slug)."""
    if not title:
        return slug
    if not _IDENTIFIER.fullmatch(title):
        return title
    words: list[str] = []
    parameters: list[str] = []
    for token in title.split("_"):
        found = _PARAMETER.fullmatch(token)
        if found and (parameters or words):
            parameters.append(_parameter(found.group(1), found.group(2), norm="rmsnorm" in title))
        else:
            words.append(_WORDS.get(token, token.upper() if re.fullmatch(r"(mx|nv)?fp\d+|e\dm\d", token) else token))
    name = " ".join(words).replace("M- ", "M-")
    return " · ".join([name[:1].upper() + name[1:], *parameters])


def _parameter(name: str, value: str, norm: bool) -> str:
    if name == "h" and norm:  # a norm's h is its hidden size (rmsnorm_h4096), an attention's its query heads
        return f"hidden {value}"
    text = _PARAMETERS[name].format(value)
    return text.removesuffix("s") if value == "1" and text.endswith("heads") else text


def implementation_title(title: str | None, fallback: str, authors: str | None = None) -> str:
    """``matmul_v2 · submission 780718`` (GPU MODE's leaderboard id and the submission) → ``submission 780718 by
    brianyu``; other titles as written (none: ``fallback``)."""
    if not title:
        return fallback
    found = _SUBMISSION.fullmatch(title)
    if found is None:
        return title
    return f"submission {found.group(1)}" + (f" by {authors}" if authors else "")
