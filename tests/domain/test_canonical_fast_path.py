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


_ANY_TEXT = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=6)
_ANY_LEAVES = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _ANY_TEXT
               | st.sampled_from([-(2**53 - 1), 2**53 - 1, 2**53, -(2**53)]))
_ANY_DOCUMENTS = st.recursive(
    _ANY_LEAVES,
    lambda children: st.lists(children, max_size=4) | st.lists(children, max_size=3).map(tuple)
    | st.dictionaries(_ANY_TEXT | st.integers(), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(_ANY_DOCUMENTS)
def test_the_iterative_fast_path_check_agrees_with_the_plain_definition(document: object) -> None:
    # _plain (a stack over exact types, the hot path) decides exactly as _plain_value (the definition)
    from kernelindex.domain.canonical import _plain, _plain_value

    assert _plain(document) == _plain_value(document)
