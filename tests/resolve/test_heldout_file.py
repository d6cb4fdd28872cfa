"""The held-out search queries (issue 46) stay a real benchmark: at least 40, every kind a kernel engineer
types represented, each expectation naming operations by slug or pattern. bench/search.py --heldout scores
them on the full catalog; this only keeps the file honest and readable."""

from __future__ import annotations

import re
from pathlib import Path

HELDOUT = Path(__file__).with_name("search_heldout.tsv")
SLUG_PATTERN = re.compile(r"^[a-z0-9*][a-z0-9*\-]*$")


def _rows() -> list[list[str]]:
    return [line.split("\t") for line in HELDOUT.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")]


def test_at_least_forty_queries_of_every_kind() -> None:
    rows = _rows()
    assert len(rows) >= 40 and all(len(r) == 3 for r in rows)
    kinds = {r[0] for r in rows}
    assert {"attention", "gemm", "dtype", "model", "punctuation", "typo"} <= kinds
    assert len({r[1] for r in rows}) == len(rows)  # no query twice


def test_every_expectation_names_operations() -> None:
    for _, query, expected in _rows():
        assert all(SLUG_PATTERN.match(p) for p in expected.split("|")), query


def test_the_bench_reads_the_file_and_counts_what_an_answer_offers() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_search", HELDOUT.parents[2] / "bench" / "search.py")
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert len(bench.heldout_queries()) == len(_rows())
    assert bench.offered({"operation": {"slug": "rope"}, "choices": []}) == ["rope"]
    assert bench.offered({"operation": None, "choices": [{"slug": "a"}, {"slug": "b"}]}) == ["a", "b"]
    suggested = {"operation": None, "choices": [], "query": {"issues": [{"suggestion": "rms-norm"}]}}
    assert bench.offered(suggested) == ["rms-norm"]
