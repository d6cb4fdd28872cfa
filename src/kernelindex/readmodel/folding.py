"""Long lists of an operation page, folded to a size a page can carry (issue 46 item 2).

An operation tuned over thousands of shapes (aiter's FP8 GEMMs: 4,112 workloads of one operation) made a
6.7 MB page: every workload in the picker, every shape in the shape table and every size in the scaling
chart. The page now carries one numbered page of the workload list (``?page=``; by default the page that
holds the selected workload), the shape table's rows of those workloads only, and a scaling chart thinned
to sizes taken at even steps through its sorted sizes. Each says what it holds of the whole, and the whole workload list
stays one request away (``/api/v1/operations/{slug}/workloads``).

An implementation tuned over those shapes holds thousands of records and runs (2,933 cohorts for one aiter
CK kernel: a 1.4 MB page, its JSON 2.8 MB): its page carries a numbered page of each list, the same
``?page=`` for both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kernelindex.readmodel.errors import BadParameter
from kernelindex.readmodel.operation_views import OperationPage, WorkloadSummary
from kernelindex.readmodel.paging import Paging, page_of
from kernelindex.readmodel.scaling import ScalingChart

WORKLOADS_PER_PAGE = 100
IMPLEMENTATION_ROWS_PER_PAGE = 100  # records held, and runs, per page of an implementation
MAX_CHART_SIZES = 96  # distinct sizes along the scaling chart's axis; a 720 px chart shows no more


def fold_long_lists(page: OperationPage, number: str | int | None) -> OperationPage:
    """``page`` with its workload list cut to page ``number`` (default: the selected workload's page),
    its shape table to those workloads and its scaling chart thinned."""
    shown, page.workloads_paging = page_of(page.workloads, number or _selected_page(page.workloads), WORKLOADS_PER_PAGE)
    if page.workloads_paging.pages > 1:
        page.workloads = shown
        if page.shapes is not None:
            keys = {w.key for w in shown}
            page.shapes.total_rows = len(page.shapes.rows)
            page.shapes.rows = [row for row in page.shapes.rows if row.workload in keys]
    if page.scaling is not None:
        page.scaling = thin_chart(page.scaling, MAX_CHART_SIZES)
    return page


def _selected_page(workloads: Sequence[WorkloadSummary]) -> int:
    index = next((i for i, w in enumerate(workloads) if w.selected), 0)
    return index // WORKLOADS_PER_PAGE + 1


def thin_chart(chart: ScalingChart, most: int) -> ScalingChart:
    """``chart`` with at most ``most`` distinct sizes, taken at even steps through the sorted sizes (the
    smallest and largest always kept), so the chart keeps the shape of where the workloads lie. A chart
    that has fewer is returned as it is."""
    xs = sorted({p.x for s in chart.series for p in s.points} | {int(f["x"]) for f in chart.floor})
    if len(xs) <= most:
        return chart
    kept = {xs[round(i * (len(xs) - 1) / (most - 1))] for i in range(most)}
    for series in chart.series:
        series.points = [p for p in series.points if p.x in kept]
    chart.floor = [f for f in chart.floor if f["x"] in kept]
    chart.sizes_total = len(xs)
    return chart


def page_of_lists(number: str | int | None, *lists: list[Any]) -> list[tuple[list[Any], Paging]]:
    """Page ``number`` of each of ``lists`` (IMPLEMENTATION_ROWS_PER_PAGE rows a page), one number for all: a
    list shorter than another may have nothing on that page; a number past every list's last page is refused
    with the last page."""
    wanted = int(number) if number else 1
    last = max(1, *(_pages(items) for items in lists))
    if wanted > last:
        raise BadParameter("page", f"page {wanted} does not exist: pages run from 1 to {last}")
    return [page_of(items, wanted, IMPLEMENTATION_ROWS_PER_PAGE) if wanted <= _pages(items) else
            ([], Paging(wanted, _pages(items), IMPLEMENTATION_ROWS_PER_PAGE, len(items), 0, 0, _pages(items), None))
            for items in lists]


def _pages(items: list[Any]) -> int:
    return max(1, -(-len(items) // IMPLEMENTATION_ROWS_PER_PAGE))
