"""Natural phrasing keeps the workload: axis-value pairs without '=', commas, 'on'; shorthand
numbers read only when one reading is measured; suggestions from the resolved operation's axes."""

from __future__ import annotations

from kernelindex.resolve.grammar import parse_query


def test_natural_phrasing_keeps_every_term() -> None:
    parsed = parse_query("RoPE, seq 2048, hidden 8192, bf16, on H100")
    assert not parsed.issues, parsed.issues
    request = parsed.request
    assert request.operation == "rope" and request.axes == {"seq": 2048, "hidden": 8192}
    assert request.dtype == "bf16" and request.gpu == "h100-sxm"
    assert [t.text for t in parsed.tokens if t.kind == "filler"] == ["on"]


def test_commas_after_key_value_pairs_are_separators() -> None:
    parsed = parse_query("rope seq=2048, hidden=8192, gpu:a100")
    assert not parsed.issues and parsed.request.axes == {"seq": 2048, "hidden": 8192}


def test_shorthand_binds_the_one_measured_reading() -> None:
    measured = {("rope", "seq"): {1024, 2048, 4096}}
    parsed = parse_query("rope seq 2k hidden=8192", measured=lambda op, axis: measured.get((op, axis), set()))
    assert not parsed.issues and parsed.request.axes == {"seq": 2048, "hidden": 8192}


def test_shorthand_with_both_or_neither_reading_is_refused_with_both() -> None:
    both = parse_query("rope seq=2k", measured=lambda op, axis: {2000, 2048})
    (issue,) = both.issues
    assert issue.code == "BAD_VALUE" and "2000 or 2048" in issue.message and "both are measured" in issue.message
    neither = parse_query("rope seq=2k", measured=lambda op, axis: {4096})
    assert "neither is measured" in neither.issues[0].message and "seq" not in neither.request.axes


def test_bare_number_suggestion_comes_from_the_operations_axes() -> None:
    parsed = parse_query("rmsnorm 4096")
    assert parsed.request.operation == "rms-norm"
    (issue,) = parsed.issues
    assert issue.code == "BARE_NUMBER" and "seq=" not in issue.message
    assert issue.suggestion is not None and not issue.suggestion.startswith("seq=")


def test_echoed_junk_is_truncated() -> None:
    junk = "x" * 20_000
    parsed = parse_query(f"rope {junk}")
    for issue in parsed.issues:
        assert len(issue.token) <= 60 and len(issue.message) < 400
