"""The reference pages' numbers, pinned (issue 2 acceptance)."""

from datetime import UTC, datetime

import pytest

from kernelindex.catalog.db import Catalog
from kernelindex.readmodel.errors import BadSelection, NotFound
from kernelindex.readmodel.operations import operation_page

NOW = datetime(2026, 11, 29, tzinfo=UTC)


def _a100_forward(page):  # noqa: ANN001, ANN202
    return next(c for c in page.cohorts if c.gpu == "NVIDIA A100 80GB" and c.mode == "forward")


def test_rope_reference_cohort(catalog: Catalog) -> None:
    page = operation_page(catalog, "rope", now=NOW)
    assert page.eligible_runs >= 48  # 48 from Liger; verified runs add to it
    selected = next(w for w in page.workloads if w.selected)
    assert selected.label == "seq = 2048 · hidden = 8192 · q_heads = 32 · kv_heads = 8 · bf16"
    page = operation_page(catalog, "rope", workload=page.selected_workload, cohort=_a100_forward(page).key, now=NOW)
    rows = [(r.rank_label, r.implementation.title, r.median_ns) for r in page.ranked]
    # One row per implementation (issue 20 item 5): Liger's two measurements of this shape (58,880 and
    # 59,488 ns, its two sweeps) and the baseline's (516,096 and 516,800 ns) are one row each, whose figure is
    # the median of the pair (issue 43 item 6: never the faster of a pair).
    assert rows == [
        ("1", "Liger", 59184),
        ("2", "Transformers", 516448),
    ]
    leader = page.ranked[0]
    assert round(leader.faster_than_baseline, 2) == 8.73
    assert any("the median of 2 measurements" in line for line in page.ranked[1].rationale)
    assert leader.implementation.install_command == 'pip install "liger-kernel==0.2.1"'
    assert leader.implementation.license == "BSD-2-Clause" and leader.implementation.usable
    assert leader.evidence == "reported" and leader.stale
    assert page.ranked[1].implementation.role == "baseline"
    assert page.headline[0].kind == "fastest_usable"
    assert page.headline[0].title == "Fastest reported · usable today · NVIDIA A100 80GB · forward"
    assert page.headline[0].row.statistic == "median" and page.headline[0].row.time_ns == 59184
    assert round(page.floor.physical["floor_ns"] / 1000, 1) == 42.2
    assert round(page.floor.record_ratio, 2) == 1.40
    assert {t["name"] for t in page.floor.physical["tensors"]} == {"q", "k", "cos", "sin", "q_out", "k_out"}
    assert [(lang.language, lang.implementation) for lang in page.fastest_by_language] == [
        ("triton", "Liger"),
        ("python", "Transformers"),
    ]
    assert page.scaling.axis == "seq"
    series = {s.title: [p.median_ns for p in s.points] for s in page.scaling.series}
    assert [round(v / 1000, 1) for v in series["Liger"]] == [34.4, 59.2, 109.0, 209.3, 410.5]
    assert [round(v / 1000, 1) for v in series["Transformers"]] == [280.8, 516.4, 994.8, 1933.3, 3817.0]
    assert "B200" in page.coverage_gaps and "H100" not in page.coverage_gaps  # the H100 lane measured rope (issue 44)
    labels = {c.label for c in page.cohorts}
    assert {
        "NVIDIA A100 80GB · forward · Liger-Kernel benchmark scripts",
        "NVIDIA A100 80GB · backward · Liger-Kernel benchmark scripts",
        "NVIDIA A100 80GB · forward+backward · Liger-Kernel benchmark scripts",
    } <= labels


def test_embedding_reference_cohorts(catalog: Catalog) -> None:
    page = operation_page(catalog, "embedding", now=NOW)
    assert page.eligible_runs >= 96 and len(page.workloads) == 16
    selected = next(w for w in page.workloads if w.selected)
    assert selected.label == "batch = 32 · seq = 512 · vocab = 1024 · hidden = 768 · fp32"
    page = operation_page(
        catalog, "embedding", workload=page.selected_workload, cohort=_a100_forward(page).key, now=NOW
    )
    kinds = [
        (h.kind, h.row.implementation.title, h.row.median_ns) for h in page.headline if h.kind != "fastest_verified"
    ]
    assert kinds == [("best_usable", "Liger", 42624), ("fastest_not_usable", "torch.compile", 39712)]
    best_usable, fastest = page.headline[0], page.headline[1]
    assert round(best_usable.vs_fastest, 2) == 1.07
    assert round(fastest.faster_than_baseline, 2) == 4.20
    assert fastest.row.implementation.not_usable_reasons == [
        {"code": "NO_PINNED_INSTALL", "sentence": "No pinned install: the source did not record the PyTorch version."}
    ]
    baseline = page.ranked[-1]
    assert (baseline.implementation.title, baseline.implementation.project, baseline.median_ns) == (
        "PyTorch nn.Embedding",
        "PyTorch",
        166720,
    )
    assert round(page.floor.physical["floor_ns"] / 1000, 1) == 26.3
    assert round(page.floor.record_ratio, 2) == 1.51
    full = next(c for c in page.cohorts if c.mode == "forward+backward" and c.gpu == "NVIDIA A100 80GB")
    assert (full.best_implementation, full.best_ns) == ("torch.compile", 300128)
    assert page.scaling.axis == "vocab"
    assert all(len(s.points) == 8 for s in page.scaling.series) and len(page.scaling.series) == 3


def test_selection_errors_are_specific(catalog: Catalog) -> None:
    with pytest.raises(NotFound, match="no operation 'warp'"):
        operation_page(catalog, "warp", now=NOW)
    with pytest.raises(BadSelection, match="workload 'nope'"):
        operation_page(catalog, "rope", workload="nope", now=NOW)
    with pytest.raises(BadSelection, match="cohort 'nope'"):
        operation_page(catalog, "rope", cohort="nope", now=NOW)


def test_json_twin_is_plain_json(catalog: Catalog) -> None:
    import json

    data = operation_page(catalog, "rope", now=NOW).to_json()
    assert json.loads(json.dumps(data))["ranked"][0]["implementation"]["title"] == "Liger"
    assert data["json_url"].startswith("/api/v1/operations/rope?workload=")
