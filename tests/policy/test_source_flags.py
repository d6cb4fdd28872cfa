"""Issue 43 item 7: a row its own source flags (aiter's tuner mismatch above 5%) is not offered as usable."""

from __future__ import annotations

from kernelindex.policy.source_flags import AITER, source_flag


def test_a_mismatch_above_five_percent_is_flagged_in_either_form_aiter_writes() -> None:
    flag = source_flag(AITER, {"us": "12.1", "err_ratio": "0.1825"})
    assert flag is not None and flag.code == "SOURCE_MISMATCH"
    assert "18.2%" in flag.sentence and "err_ratio" in flag.sentence
    moe = source_flag(AITER, {"us": "40", "err1": "0.0%", "err2": "24.7%"})  # the MoE tables write percentages
    assert moe is not None and "24.7%" in moe.sentence and "(err2)" in moe.sentence


def test_at_or_under_five_percent_or_another_source_is_not_flagged() -> None:
    assert source_flag(AITER, {"err_ratio": "0.05"}) is None
    assert source_flag(AITER, {"err1": "4.9%", "err2": "0.1%"}) is None
    assert source_flag(AITER, {"us": "3.2"}) is None  # no error figure recorded
    assert source_flag(AITER, {"err_ratio": "n/a"}) is None
    assert source_flag("liger-kernel-benchmarks", {"err_ratio": "0.5"}) is None
