"""Issue 43 item 7: a search answer's row applies the rule the operation page applies to a row its own source
flags (aiter's tuner mismatch above 5%): not usable, with the source's figure as the reason, and hidden by
``usable:yes``. Answers of the web search, ``ki search``, the JSON API and MCP are this resolution's JSON."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from kernelindex.catalog.db import Catalog
from kernelindex.resolve.service import search
from kernelindex.sources.aiter import import_aiter

ROWWISE = "gfx,cu_num,M,N,K,q_dtype_w,kernelId,splitK,us,kernelName,tflops,bw,errRatio\n"
NOW = datetime(2026, 12, 7, tzinfo=UTC)


def _rows(catalog: Catalog, query: str) -> list[dict]:
    answer = search(catalog, query, now=NOW).to_json()
    return [row for cohort in answer["exact"] for row in cohort["rows"]]


def test_a_flagged_row_reads_as_not_usable_in_a_search_answer(empty_catalog: Catalog, tmp_path: Path) -> None:
    table = tmp_path / "configs" / "a8w8_tuned_gemm.csv"
    table.parent.mkdir(parents=True)
    table.write_text(ROWWISE + "gfx942,304,1,1280,8192,torch.int8,34,0,20.5,a8w8_rowwise_256x16x64x512,1,1,0.1825\n"
                     + "gfx950,256,1,1280,8192,torch.int8,34,0,10.5,a8w8_rowwise_256x16x64x512,1,1,0.0\n",
                     encoding="utf-8")
    import_aiter(empty_catalog, tmp_path, dry_run=False, actor="test")
    (flagged,) = _rows(empty_catalog, "gemm-a8w8-rowwise-n1280-k8192 m=1 mi300x")
    (clean,) = _rows(empty_catalog, "gemm-a8w8-rowwise-n1280-k8192 m=1 mi355x")
    assert flagged["rank"] == 1  # ranked as the source measured it, as on the operation page
    reasons = flagged["implementation"]["not_usable_reasons"]
    assert not flagged["implementation"]["usable"] and reasons[0]["code"] == "SOURCE_MISMATCH"
    assert "18.2% of this kernel's output elements" in reasons[0]["sentence"]
    assert clean["implementation"]["usable"] and clean["implementation"]["not_usable_reasons"] == []
    assert _rows(empty_catalog, "gemm-a8w8-rowwise-n1280-k8192 m=1 mi300x usable:yes") == []
