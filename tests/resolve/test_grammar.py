"""The query grammar: recognition, issues beside their tokens, never raising, round trips."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kernelindex.resolve.grammar import MAX_QUERY_CHARS, parse_query
from kernelindex.resolve.interpret import canonical_query, interpretation


def test_axis_bindings_gpu_and_interpretation() -> None:
    parsed = parse_query("rope seq=2048 hidden=8192 gpu:a100")
    assert parsed.request.operation == "rope"
    assert parsed.request.axes == {"seq": 2048, "hidden": 8192}
    assert parsed.request.gpu == "a100-80gb"
    assert not parsed.issues
    assert interpretation(parsed.request) == (
        "Operation Rotary position embedding (rope) · seq 2048 · hidden 8192 · gpu A100")


def test_bare_gpu_word_and_colon_or_equals() -> None:
    a = parse_query("rope seq=3000 hidden=8192 a100").request
    b = parse_query("op:rope seq:3000 hidden:8192 gpu=A100").request
    assert a == b


def test_unknown_key_is_reported_with_suggestion_and_rest_resolves() -> None:
    parsed = parse_query("rope gpuu:a100")
    assert parsed.request.operation == "rope"
    (issue,) = parsed.issues
    assert issue.code == "UNKNOWN_KEY"
    assert issue.token == "gpuu:a100" and (issue.start, issue.end) == (5, 14)
    assert "did you mean 'gpu:'" in issue.message
    assert issue.suggestion == "gpu:a100"


def test_typo_in_operation_name_is_suggested_not_picked() -> None:
    parsed = parse_query("embeding")
    assert parsed.request.operation is None and parsed.suggested[0] == "embedding"
    (issue,) = parsed.issues
    assert issue.code == "UNKNOWN_WORD" and issue.suggestion == "embedding" and "did you mean" in issue.message


def test_two_word_operation_name_dtype_gpu() -> None:
    parsed = parse_query("layer norm fp32 h100")
    assert parsed.request.operation == "layer-norm"
    assert parsed.request.dtype == "fp32"
    assert parsed.request.gpu == "h100-sxm"
    assert not parsed.issues


def test_dtype_aliases_languages_modes_trust() -> None:
    r = parse_query("rms norm bfloat16 triton bwd trust:verified usable:no sm90").request
    assert (r.operation, r.dtype, r.language, r.mode, r.trust, r.usable, r.arch) == (
        "rms-norm", "bf16", "triton", "backward", "verified", False, "sm_90")


def test_family_word_is_ambiguous_and_offers_a_chooser() -> None:
    parsed = parse_query("normalization")
    assert parsed.request.operation is None
    assert {"layer-norm", "rms-norm"} <= set(parsed.operation_candidates)


def test_bad_values_are_reported_beside_their_token() -> None:
    parsed = parse_query("rope dtype:bfloat17 seq=abc 2048 zzqx")
    codes = [(i.token, i.code) for i in parsed.issues]
    assert codes == [("dtype:bfloat17", "BAD_VALUE"), ("seq=abc", "BAD_VALUE"), ("2048", "BARE_NUMBER"),
                     ("zzqx", "UNKNOWN_WORD")]
    assert parsed.issues[0].suggestion == "dtype:bfloat16"
    assert parsed.request.operation == "rope"


def test_axis_of_another_operation_is_reported() -> None:
    parsed = parse_query("rope vocab=1024")
    assert parsed.request.axes == {}
    assert parsed.issues[0].code == "AXIS_NOT_IN_OPERATION"


def test_conflicting_values_keep_the_first_and_say_so() -> None:
    parsed = parse_query("rope a100 h100")
    assert parsed.request.gpu == "a100-80gb"
    assert parsed.issues[0].code == "CONFLICT"


def test_overlong_query_is_cut_with_an_issue() -> None:
    parsed = parse_query("rope " * 200)
    assert parsed.request.operation == "rope"
    assert any(i.code == "QUERY_TOO_LONG" for i in parsed.issues)
    assert len(parsed.text) > MAX_QUERY_CHARS


def test_every_token_is_accounted_for() -> None:
    text = "layer norm fp32 b200 seq=1 foo gpuu:x"
    parsed = parse_query(text)
    covered = {i for t in parsed.tokens for i in range(t.start, t.end)}
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())


_WORDS = st.sampled_from([
    "rope", "embedding", "embeding", "layer", "norm", "rms", "a100", "H100", "b200", "bf16", "float32",
    "triton", "cuda", "fwd", "full", "verified", "usable", "seq=2048", "hidden:8192", "gpu:", "gpuu:a100",
    "op:rotary", "dtype=bf16", "trust:replicated", 'license:"MIT OR Apache-2.0"', "usable:no", "2048",
    "sm_90", "vocab=1024", "x=y", ":", "=", "'", '"', "mode:backward", "lang:python", "source:liger",
])


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=80), st.lists(_WORDS, max_size=8).map(" ".join)))
def test_parser_never_raises_and_round_trips(text: str) -> None:
    parsed = parse_query(text)
    again = parse_query(canonical_query(parsed.request))
    assert again.request == parsed.request
    assert not again.issues
    assert interpretation(again.request) == interpretation(parsed.request)


def test_axis_names_as_scripts_spell_them() -> None:
    r = parse_query("rope seq_len=2048 hidden_size=8192 num_q_heads=32").request
    assert r.axes == {"seq": 2048, "hidden": 8192, "q_heads": 32}


def test_shorthand_numbers_are_refused_with_both_readings() -> None:
    (issue,) = parse_query("rope seq=2k").issues
    assert issue.code == "BAD_VALUE" and "2000 or 2048" in issue.message
    assert issue.suggestion == "seq=2048"
