"""Issue 46 on the shared test catalog (Liger, the KernelIndex export, the verified bundles): attention
words find the 18 GQA definitions measured on the H200, bound GEMM constants narrow to one operation,
punctuation keeps the GPU, and superseded runs never appear in a search answer."""

from __future__ import annotations

from datetime import datetime

from kernelindex.catalog.db import Catalog
from kernelindex.resolve.service import search


def test_fastest_attention_h200_offers_the_gqa_definitions_measured_there_first(catalog: Catalog,
                                                                                now: datetime) -> None:
    r = search(catalog, "fastest attention h200", now=now)
    assert r.status == "choose_operation"
    measured = [c for c in r.choices if c.on_gpu_runs]
    assert len(measured) == 18 and all(c.slug.startswith(("gqa-paged-decode-", "gqa-ragged-prefill-"))
                                       for c in measured)
    assert r.choices[:18] == tuple(measured)  # listed first
    assert all("multi-token" not in c.slug and "neighborhood" not in c.slug for c in r.choices)


def test_paged_attention_decode_with_a_model_offers_the_decode_definitions_of_its_shape(
        catalog: Catalog, now: datetime) -> None:
    r = search(catalog, "paged attention decode llama 8b h200", now=now)
    out = r.to_json()
    assert out["status"] == "choose_operation" and not r.parsed["issues"]
    assert {c.slug for c in r.choices} == {"gqa-paged-decode-h32-kv8-d128-ps1", "gqa-paged-decode-h32-kv8-d128-ps64"}
    assert all(c.on_gpu_runs for c in r.choices)
    assert "llama 8b" in out["canonical_query"]  # the query parses back to the same two
    other = search(catalog, "paged attention decode qwen 2.5 7b h200", now=now)  # no definition has its shape
    assert [i["code"] for i in other.parsed["issues"]] == ["MODEL_WORD"]
    assert other.choices[0].slug.startswith("gqa-paged-decode-") and all("decode" in c.slug for c in other.choices)


def test_bound_gemm_constants_and_the_gpu_pick_the_one_measured_definition(catalog: Catalog, now: datetime) -> None:
    r = search(catalog, "gemm n=4096 k=4096 m=128 h200", now=now)
    assert r.operation is not None and r.operation["slug"] == "gemm-n4096-k4096"
    assert r.status == "exact" and r.exact and all(c.gpu == "h200" for c in r.exact)
    assert r.notes[0].code in ("OPERATION_PICKED_BY_GPU_EVIDENCE", "OPERATION_PICKED_BY_AXES")
    shape = search(catalog, "gemm 128x4096x4096 h200", now=now)
    assert shape.operation is not None and shape.operation["slug"] == "gemm-n4096-k4096"
    assert shape.request["axes"] == {"m": 128, "n": 4096, "k": 4096}


def test_a_question_mark_keeps_the_gpu(catalog: Catalog, now: datetime) -> None:
    r = search(catalog, "rmsnorm backward on H100?", now=now)
    assert r.request["gpu"] == "h100-sxm" and r.request["mode"] == "backward"
    assert r.to_json()["status"] != "partial"


def test_superseded_runs_never_appear_in_a_search_answer(catalog: Catalog, now: datetime) -> None:
    """rms-norm's H200 runs of the first campaigns are superseded by protocol v3's: the answer lists neither
    them nor the cohorts that hold only them."""
    out = search(catalog, "fastest rmsnorm backward h200", now=now).to_json()
    listed = out["exact"] + out["other_protocols"]
    assert listed and all(c["rows"] for c in listed)  # no cohort of superseded runs only
    reasons = {h["code"] for c in listed for h in c["not_ranked"]}
    assert "SUPERSEDED" not in reasons
    assert "no eligible run" not in out["message"]


def test_kernel_alone_names_nothing_and_lists_no_catalog_worth_of_choices(catalog: Catalog, now: datetime) -> None:
    from kernelindex.resolve.chooser import MAX_UNNAMED

    r = search(catalog, "kernel", now=now)
    assert r.status == "no_operation" and not r.parsed["issues"]
    assert len(r.choices) <= MAX_UNNAMED and "with the most runs" in r.message


def test_flash_hides_other_implementations_rows_but_ranks_over_all(catalog: Catalog, now: datetime) -> None:
    r = search(catalog, "flash attention decode h200 num_qo_heads=32 num_kv_heads=8 head_dim=128 page_size=64 "
                        "batch_size=127", now=now)
    assert r.operation is not None and r.operation["slug"] == "gqa-paged-decode-h32-kv8-d128-ps64"
    shown = [row for c in r.exact for row in c.rows]
    assert shown and all("flash" in row.run.implementation.title.lower() for row in shown)
    assert any(h.reason.code == "HIDDEN_BY_IMPLEMENTATION" for c in r.exact for h in c.hidden)
    assert any(n.code == "FILTERS_HIDE_NOT_RERANK" for n in r.notes)


def test_a_precision_narrows_the_gemm_family_and_no_run_on_the_gpu_is_said_plainly(catalog: Catalog,
                                                                                   now: datetime) -> None:
    r = search(catalog, "fp8 gemm a100", now=now)  # Liger's A100 data holds no GEMM
    assert r.status == "choose_operation" and r.choices
    assert all("fp8" in c.slug or "a8w8" in c.slug for c in r.choices[:3])
    assert not any(c.on_gpu_runs for c in r.choices)
    assert "None of them has runs on A100" in r.message and "listed first" not in r.message
