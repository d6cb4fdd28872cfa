"""A search answer a user can read (issue 46): it leads with the answer and folds the rest, and a run timed by
its mean shows its mean (never "median —")."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rich.console import Console

from kernelindex.cli import renderers


def _rendered(data: Any, render: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    console = Console(record=True, width=200)
    monkeypatch.setattr(renderers, "console", console)
    render(data)
    return console.export_text()


def _row(run_id: str, title: str, ns: int) -> dict[str, Any]:
    return {"run_id": run_id, "rank": 1, "rank_label": "1", "within_noise": False, "median_ns": ns, "vs_first": 1.0,
            "evidence": "verified", "stale": False, "region_note": None, "host_bound": None,
            "implementation": {"title": title, "baseline": False, "usable": True}}


def _cohort(hidden: int, mode: str = "backward", query: str = "") -> dict[str, Any]:
    row = _row(f"run{hidden:012d}", f"impl-{hidden}", 1000 + hidden)
    return {"label": f"H200 · {mode}", "workload": {"axes": {"rows": 2048, "hidden": hidden}, "dtypes": {"T": "bf16"}},
            "ranked_statistic": "median device time", "rows": [row, _row("second000000", "slower", 9000)],
            "leader": row, "eligible_runs": 2, "hidden_by_filters": [], "not_ranked": [], "mode": mode,
            "query": query}


def _answer() -> dict[str, Any]:
    exact = [_cohort(h) for h in (1024, 2048, 4096)]
    other = [_cohort(h, "forward", "op:rms-norm gpu:h200 mode:forward") for h in (1024, 2048)]
    return {"interpretation": "Operation rms-norm · gpu H200 · mode backward", "message": "Exact evidence.",
            "query": {"issues": []}, "choices": [], "exact": exact, "exact_total": 3, "nearest": None,
            "other_protocols": other, "other_protocols_total": 2, "compatible": {"shown": [], "total": 0},
            "gaps": [], "notes": []}


def test_search_leads_with_the_answer_and_folds_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _rendered(_answer(), renderers.render_resolution, monkeypatch)
    assert text.count("slower") == 1  # only the first cohort is ranked in full
    assert "2 more exact cohort(s), leaders only" in text and "impl-2048" in text and "impl-4096" in text
    assert "2 cohort(s) measured it under another protocol (forward)" in text
    assert "ki resolve op:rms-norm gpu:h200 mode:forward" in text
    assert "impl-1024" in text.split("more exact cohort")[0]  # the answer comes first
    assert len(text.splitlines()) < 30


def test_show_run_prints_the_runs_own_statistic(monkeypatch: pytest.MonkeyPatch) -> None:
    run = {"run_id": "f6cd0e32adfc8875", "operation": "gemm", "operation_title": "GEMM", "status": "passed",
           "implementation": {"title": "aiter", "license": "MIT", "install_command": None, "not_usable_reasons": []},
           "timing": {"mean_ns": 5405, "samples": 101}, "rank_label": "1", "cohort_size": 1,
           "not_ranked_reasons": [], "vs_first": 1.0, "cohort_label": "MI300X", "workload": {"label": "m 1"},
           "gpu": "MI300X", "evidence_sentence": "reported", "observed_at": "2026-01-01T00:00:00Z", "stale": False,
           "operation_url": "/operations/gemm"}
    text = _rendered(run, renderers.render_run, monkeypatch)
    assert "mean" in text and "5.41 µs" in text
    assert "median" not in text
    medians = _rendered(json.loads(json.dumps({**run, "timing": {"median_ns": 2000, "p20_ns": 1900, "p80_ns": 2100}})),
                        renderers.render_run, monkeypatch)
    assert "median" in medians and "2.00 µs" in medians and "p20–p80" in medians
