"""Implementation lines of a library's own API, named as its users know them, and shared by every way a call of
that API reaches the catalog: the runner's adapters and a source's solutions that call the same API. One line per
(call, operation), so a definition's line page holds the source's reported runs (FlashInfer-Bench's B200 rows)
and the runner's verified ones (H200, H100) together, each revision with its own version.

FlashInfer-Bench names every solution that calls a library ``flashinfer_wrapper_<6 hex digits>``, whatever the
library (its four ``gemm-n*`` ones call ``torch.nn.functional.linear``): the name says nothing. A solution belongs
to FlashInfer's line only where its description names one of FlashInfer's wrapper classes below (docs/flashinfer.md).
"""

from __future__ import annotations

import re

FLASHINFER_PROJECT = "flashinfer"  # registry/projects.yaml
# FlashInfer's wrapper class → (line prefix, the words a user knows it by)
FLASHINFER_CALLS: dict[str, tuple[str, str]] = {
    "BatchDecodeWithPagedKVCacheWrapper": ("flashinfer-batch-decode-paged", "batch decode, paged KV"),
    "BatchPrefillWithPagedKVCacheWrapper": ("flashinfer-batch-prefill-paged", "batch prefill, paged KV"),
    "BatchPrefillWithRaggedKVCacheWrapper": ("flashinfer-batch-prefill-ragged", "batch prefill, ragged KV"),
}
_NAMED = re.compile(r"\b(" + "|".join(FLASHINFER_CALLS) + r")\b")
_WRAPPER_SOLUTION = re.compile(r"flashinfer_wrapper_[0-9a-f]{6}")


def flashinfer_line(wrapper: str, operation: str) -> str:
    """The line of FlashInfer's ``wrapper`` on ``operation`` (a catalog slug)."""
    return f"{FLASHINFER_CALLS[wrapper][0]}-{operation}"


def flashinfer_title(wrapper: str, version: str | None = None) -> str:
    """"FlashInfer 0.7.4 batch decode, paged KV"; without the version where the source did not record it."""
    return " ".join(p for p in ("FlashInfer", version, FLASHINFER_CALLS[wrapper][1]) if p)


def flashinfer_call_of(title: str | None, description: str | None) -> str | None:
    """The FlashInfer wrapper class a FlashInfer-Bench ``flashinfer_wrapper_*`` solution calls (the first its
    description names), or None: another solution, or one whose description names no FlashInfer wrapper."""
    if not _WRAPPER_SOLUTION.fullmatch(title or ""):
        return None
    found = _NAMED.search(description or "")
    return found[1] if found else None
