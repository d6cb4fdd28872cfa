"""Issue 25: FlashInfer-Bench's fp16 gemm-n4096-k4096 and aiter's bf16 gemm-bf16-n4096-k4096 are two operations
(an operation is its dtypes too). The operation page shows the reviewed counterpart's evidence beside its own in
a "Same shape, other dtype" section — each cohort with its own floor — and never ranks one with the other. The
pair comes from one rule (policy.other_dtype): a reviewed pattern AND specs equal but for dtypes."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from web_helpers import make_app

from kernelindex import registry
from kernelindex.catalog.db import Catalog
from kernelindex.policy.other_dtype import RelationRule, counterparts, dtype_words, same_shape_other_dtype
from kernelindex.readmodel.other_dtype import answer_operations
from kernelindex.sources.aiter.operations import GEMM_KINDS, gemm_operation

AITER = Path("/work/shared/data/aiter/model_configs/qwen3_5_397b_bf16_tuned_gemm.csv")
SHIPPED_AITER_TABLE = "model_configs/qwen3_5_397b_bf16_tuned_gemm.csv"
RULE = RelationRule("gemm-n{n}-k{k}", "gemm-bf16-n{n}-k{k}", "reviewed")


def test_the_pair_is_same_shape_other_dtype_and_nothing_else_is() -> None:
    fp16 = registry.load_operation("gemm-n4096-k4096")
    bf16 = gemm_operation(GEMM_KINDS["gemm-bf16"], 4096, 4096)
    relation = same_shape_other_dtype(fp16, bf16, RULE)
    assert relation is not None and dtype_words(relation) == "fp16 here, bf16 there"
    assert relation.dtypes_here == {"a": "fp16", "b": "fp16", "c": "fp16"}
    assert relation.dtypes_there == {"a": "bf16", "b": "bf16", "c": "bf16"}
    assert same_shape_other_dtype(fp16, fp16, RULE) is None  # same dtypes: one operation, not a pair
    assert same_shape_other_dtype(fp16, gemm_operation(GEMM_KINDS["gemm-bf16"], 4096, 2048), RULE) is None
    assert same_shape_other_dtype(fp16, gemm_operation(GEMM_KINDS["gemm-bf16-bias"], 4096, 4096), RULE) is None
    assert same_shape_other_dtype(fp16, gemm_operation(GEMM_KINDS["gemm-a8w8-rowwise"], 4096, 4096), RULE) is None


def test_reviewed_patterns_pair_both_ways_and_only_their_own_slugs() -> None:
    rules = [RULE]
    assert [s for s, _ in counterparts("gemm-n4096-k4096", rules)] == ["gemm-bf16-n4096-k4096"]
    assert [s for s, _ in counterparts("gemm-bf16-n4096-k4096", rules)] == ["gemm-n4096-k4096"]
    assert counterparts("gemm-nvfp4-n4096-k4096", rules) == [] and counterparts("rms-norm", rules) == []
    # The answer cache keys a page by every operation it reads (registry rules: the shipped relation).
    assert answer_operations("gemm-n4096-k4096") == ("gemm-n4096-k4096", "gemm-bf16-n4096-k4096")
    assert answer_operations("rms-norm") == ("rms-norm",)


@pytest.fixture
def gemm_catalog(empty_catalog: Catalog, tmp_path: Path) -> Catalog:
    """The KernelIndex export (FlashInfer-Bench's B200 rows) and aiter's real MI355X rows of N = K = 4096."""
    from kernelindex.sources.aiter.importer import import_aiter
    from kernelindex.sources.base import FileTransport
    from kernelindex.sources.kernelindex_export import bundled_export_path, import_export

    if not AITER.exists():
        pytest.skip(f"the staged aiter tables are not at {AITER}")
    import_export(empty_catalog, FileTransport(bundled_export_path()), dry_run=False, actor="test")
    lines = AITER.read_text().splitlines()
    rows = [lines[0], *(line for line in lines[1:] if ",4096,4096,False,torch.bfloat16," in line)]
    assert len(rows) > 10
    table = tmp_path / SHIPPED_AITER_TABLE
    table.parent.mkdir(parents=True)
    table.write_text("\n".join(rows) + "\n")
    import_aiter(empty_catalog, tmp_path, dry_run=False, actor="test")
    return empty_catalog


def test_gemm_page_shows_aiter_mi355x_beside_and_never_in_the_ranking(gemm_catalog: Catalog) -> None:
    with TestClient(make_app(gemm_catalog)) as client:
        page = client.get("/api/v1/operations/gemm-n4096-k4096").json()
        key = next(w["key"] for w in page["workloads"] if w["axes"]["m"] == 128)
        page = client.get(f"/api/v1/operations/gemm-n4096-k4096?workload={key}").json()
        assert all("MI355" not in c["gpu"] for c in page["cohorts"])  # its own cohorts only
        assert "aiter" not in {r["implementation"]["project"] for r in page["ranked"]}
        [other] = page["other_dtype"]
        assert other["operation"] == "gemm-bf16-n4096-k4096" and other["dtypes"] == "fp16 here, bf16 there"
        assert "never ranked" in other["note"] and "C = A·Bᵀ" in other["why"]
        [cohort] = other["cohorts"]
        assert "MI355X" in cohort["gpu"] and cohort["evidence"] == "reported"
        assert cohort["best_ns"] == 15480  # the table says 15.4805 us
        assert cohort["floor"]["floor_ns"] < cohort["best_ns"] and "mean time per call" in cohort["statistic"]
        assert cohort["protocol"].startswith("aiter tuner")
        html = client.get(f"/operations/gemm-n4096-k4096?workload={key}").text
        assert "Same shape, other dtype" in html and "Fp16 here, bf16 there" in html
        back = client.get("/api/v1/operations/gemm-bf16-n4096-k4096").json()
        assert [o["operation"] for o in back["other_dtype"]] == ["gemm-n4096-k4096"]
