"""The KernelIndex export's measurements are JSON numbers (issue 8, defect 14): a value written as a
string ("58880", " 1_0") skips its run with the reason instead of being converted or crashing."""

from __future__ import annotations

import pytest

from kernelindex.sources.kernelindex_export.operations import RowSkipped
from kernelindex.sources.kernelindex_export.runs import run_figures


def _mean(value: object) -> list[dict]:
    return [{"metric": "latency", "statistic": "mean", "unit": "ns", "value": value, "sampleCount": 10}]


def test_a_numeric_mean_is_read() -> None:
    assert run_figures("passed", _mean(58880.4), "mean")["timing"]["mean_ns"] == 58880


@pytest.mark.parametrize("value", ["58880", " 1_0", True])
def test_a_mean_written_as_text_skips_the_run(value: object) -> None:
    with pytest.raises(RowSkipped, match="measurement value is .*: write it as a JSON number"):
        run_figures("passed", _mean(value), "mean")


def test_a_score_written_as_text_skips_the_run() -> None:
    score = [{"metric": "score", "statistic": "geomean", "unit": "s", "value": "0.5"}]
    with pytest.raises(RowSkipped, match="score value is '0.5'"):
        run_figures("passed", score, "geomean")
