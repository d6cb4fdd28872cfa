"""Property: any text query and its structured form resolve to the same answer."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelindex.catalog.db import Catalog
from kernelindex.resolve.request import ResolveRequest
from kernelindex.resolve.service import resolve_structured, search

NOW = datetime(2026, 11, 29, tzinfo=UTC)
WORDS = st.sampled_from([
    "rope", "embedding", "layer norm", "rms_norm", "a100", "h100", "h200", "b200", "bf16", "fp32", "triton",
    "python", "fwd", "bwd", "full", "usable", "trust:verified", "usable:no", "seq=2048", "seq=3000",
    "hidden=8192", "hidden=768", "vocab=1024", "batch=32", "rows=4096", "license:BSD-2-Clause", "source:liger",
    "arch:sm_90",
])


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(WORDS, min_size=1, max_size=5).map(" ".join))
def test_text_and_structured_resolve_identically(catalog: Catalog, text: str) -> None:
    by_text = search(catalog, text, now=NOW)
    structured = ResolveRequest.model_validate(by_text.request)
    assert resolve_structured(catalog, structured, now=NOW).answer() == by_text.answer()
