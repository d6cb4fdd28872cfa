"""Titles are never raw ids (issue 46 item 7): FlashInfer-Bench's definition ids and GPU MODE's
leaderboard ids read as words on every door; a title a person wrote is kept as written."""

from __future__ import annotations

import pytest

from kernelindex.domain.titles import implementation_title, operation_title


@pytest.mark.parametrize(("written", "shown"), [
    ("gqa_paged_decode_h32_kv8_d128_ps1", "GQA paged decode · 32 heads · 8 KV heads · head dim 128 · page size 1"),
    ("gqa_paged_prefill_causal_h16_kv1_d128_ps64",
     "GQA paged prefill causal · 16 heads · 1 KV head · head dim 128 · page size 64"),
    ("mla_ragged_prefill_causal_h16_qk192_vo128", "MLA ragged prefill causal · 16 heads · QK dim 192 · VO dim 128"),
    ("gemm_n4096_k4096", "GEMM · N 4096 · K 4096"),
    ("grouped_gemm_fp8_fp4_m_masked_g4_n2048_k2048", "Grouped GEMM FP8 FP4 M-masked · 4 groups · N 2048 · K 2048"),
    ("fused_add_rmsnorm_h2048", "Fused add + RMSNorm · hidden 2048"),
    ("Rotary position embedding", "Rotary position embedding"),
    ("Softmax", "Softmax"),
])
def test_an_operation_id_reads_as_words(written: str, shown: str) -> None:
    assert operation_title(written, "slug") == shown


def test_an_operation_without_a_title_shows_its_slug() -> None:
    assert operation_title(None, "rope") == "rope"


def test_a_gpu_mode_submission_is_named_by_its_number_and_author() -> None:
    assert implementation_title("matmul_v2 · submission 780718", "sym", "brianyu") == "submission 780718 by brianyu"
    assert implementation_title("amd-mxfp4-mm · submission 12", "sym") == "submission 12"
    assert implementation_title("Liger", "sym") == "Liger" and implementation_title(None, "sym") == "sym"
