"""The JCS fast path writes exactly the bytes of the reference implementation (rfc8785)."""

from __future__ import annotations

import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelindex.domain.canonical import canonical_bytes

_TEXT = st.text(alphabet=st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs",)), max_size=12)
_LEAVES = st.none() | st.booleans() | st.integers(min_value=-(2**53 - 1), max_value=2**53 - 1) | _TEXT
_DOCUMENTS = st.recursive(_LEAVES, lambda children: st.lists(children, max_size=4)
                          | st.dictionaries(_TEXT, children, max_size=4), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(_DOCUMENTS)
def test_fast_path_equals_rfc8785(document: object) -> None:
    assert canonical_bytes(document) == rfc8785.dumps(document)


def test_documents_outside_the_fast_path_still_canonicalise() -> None:
    for document in ({"x": 0.1, "y": 1e21}, {"\U0001f600": 1, "\ue000": 2}, {"n": -0.0}):
        assert canonical_bytes(document) == rfc8785.dumps(document)
    assert canonical_bytes({"b": "\u2028\x01\x7f", "a": [True, None]}) == rfc8785.dumps(
        {"b": "\u2028\x01\x7f", "a": [True, None]})
