"""The folding of long lists (readmodel.folding): a chart thinned to even steps through its sizes, and one
page number over lists of different lengths."""

from __future__ import annotations

import pytest

from kernelindex.readmodel.errors import BadParameter
from kernelindex.readmodel.folding import IMPLEMENTATION_ROWS_PER_PAGE, page_of_lists, thin_chart
from kernelindex.readmodel.scaling import ScalingChart, ScalingPoint, ScalingSeries


def _chart(xs: list[int]) -> ScalingChart:
    points = [ScalingPoint(x, 1000 + x, f"run{x}", f"w{x}") for x in xs]
    return ScalingChart("m", "held", True, True, [ScalingSeries("a", "A", points)],
                        [{"x": x, "floor_ns": x} for x in xs])


def test_a_thinned_chart_keeps_the_ends_and_at_most_the_asked_sizes() -> None:
    xs = list(range(1, 5001, 3))
    thinned = thin_chart(_chart(xs), 50)
    kept = [p.x for p in thinned.series[0].points]
    assert len(kept) == 50 and kept[0] == xs[0] and kept[-1] == xs[-1] and thinned.sizes_total == len(xs)
    assert [f["x"] for f in thinned.floor] == kept


def test_a_short_chart_is_left_as_it_is() -> None:
    chart = thin_chart(_chart([1, 2, 4, 8]), 50)
    assert len(chart.series[0].points) == 4 and chart.sizes_total is None


def test_one_page_number_over_lists_of_different_lengths() -> None:
    long, short = list(range(IMPLEMENTATION_ROWS_PER_PAGE * 3 - 1)), list(range(5))
    (third, long_paging), (nothing, short_paging) = page_of_lists("3", long, short)
    assert third == long[200:] and long_paging.pages == 3 and long_paging.next is None
    assert nothing == [] and short_paging.pages == 1 and short_paging.previous == 1
    with pytest.raises(BadParameter, match="pages run from 1 to 3"):
        page_of_lists("4", long, short)
