"""A cohort whose runs are all out of the ranking (superseded, under-sampled) says which and why in the
CLI, never "all 0 row(s) hidden by the filters"."""

from __future__ import annotations

import pytest

from kernelindex.cli import renderers


def test_a_cohort_of_only_unranked_runs_names_them(capsys: pytest.CaptureFixture[str]) -> None:
    cohort = {"label": "H200 · backward · KernelIndex runner",
              "workload": {"axes": {"seq": 1024}, "dtypes": {"x": "fp32"}}, "rows": [], "hidden_by_filters": [],
              "not_ranked": [{"implementation": "Liger", "run_id": "f01647461a9313d9",
                              "sentence": "A newer run supersedes this one."}]}
    renderers._cohort_block(cohort)
    out = capsys.readouterr().out
    assert "no ranked row" in out and "Liger (f01647461a9313d9)" in out and "supersedes" in out
    assert "0 row(s)" not in out
