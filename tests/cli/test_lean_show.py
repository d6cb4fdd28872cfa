"""``ki show operation`` over the local catalog derives only what its tables print (``services/operation_brief.py``,
issue 46 item 4): each printed field must stay the operation page's own, and the printed text the text the page's
JSON renders to, for every operation of the test catalog and for the page's selections (a GPU, a workload, a
cohort) — so the one-shot path and the page cannot drift."""

import gc
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kernelindex import urls
from kernelindex.catalog.db import Catalog
from kernelindex.cli import app
from kernelindex.cli.backends import CommandError, LocalBackend
from kernelindex.cli.console import console, markup_safe
from kernelindex.cli.renderers import render_operation
from kernelindex.readmodel.loading import OperationData
from kernelindex.services.operation_brief import BRIEF_FIELDS

WIDTH = 120


@pytest.fixture
def backend(catalog: Catalog, now: datetime) -> LocalBackend:
    return LocalBackend(catalog.url, clock=lambda: now)


@pytest.fixture
def wide_console(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # rich's width setter fixes ``_width``; reading ``console.width`` gives the detected width, so restoring it would
    # pin the shared console to this terminal's width for every later test: put back ``_width`` itself (None: detect)
    monkeypatch.setattr(console, "_width", WIDTH)
    yield


def _printed(data: dict[str, Any]) -> str:
    with console.capture() as captured:
        render_operation(markup_safe(data))
    return captured.get()


def _same_as_page(backend: LocalBackend, slug: str, query: dict[str, Any]) -> str:
    page = backend.get(urls.operation(slug), query)
    brief = backend.operation_brief(slug, query)
    assert set(brief) == set(BRIEF_FIELDS)
    for name in BRIEF_FIELDS:
        expected = page[name]
        if name == "cohort_line" and expected is not None:
            expected = {"ranked_statistic": expected["ranked_statistic"]}
        assert brief[name] == expected, f"{slug} {query}: {name}"
    printed = _printed(brief)
    assert printed == _printed(page)
    return printed


def test_every_operation_prints_what_its_page_says(backend: LocalBackend, catalog_operations: dict[str, OperationData],
                                                    wide_console: None) -> None:
    printed = [_same_as_page(backend, slug, {}) for slug in sorted(catalog_operations)]
    assert len(printed) >= 30 and sum("Ranked (selected cohort)" in p for p in printed) == len(printed)
    assert any("Fastest" in p for p in printed)  # a headline was compared, not only empty lists


def test_a_selection_prints_what_its_page_says(backend: LocalBackend, catalog_operations: dict[str, OperationData],
                                               wide_console: None) -> None:
    page = backend.get(urls.operation("rope"), {})
    other = next(w["key"] for w in page["workloads"] if not w["selected"])
    cohort = next(c["key"] for c in page["cohorts"] if not c["selected"])
    for query in ({"gpu": "h100"}, {"gpu": "b200"}, {"workload": other}, {"cohort": cohort}, {"page": "1"}):
        _same_as_page(backend, "rope", query)


@pytest.mark.parametrize(("slug", "query"), [("no-such-operation", {}), ("rope", {"cohort": "0" * 12}),
                                             ("rope", {"workload": "nope"}), ("Bad Slug", {})])
def test_a_refusal_is_the_pages_refusal(backend: LocalBackend, slug: str, query: dict[str, Any]) -> None:
    with pytest.raises(CommandError) as page:
        backend.get(urls.operation(slug), query)
    with pytest.raises(CommandError) as brief:
        backend.operation_brief(slug, query)
    assert (str(brief.value), brief.value.code) == (str(page.value), page.value.code)


def test_a_read_command_leaves_the_garbage_collector_on(tmp_path: Path) -> None:
    """``run_command`` turns the collector off for the command only (an in-process caller keeps its own)."""
    assert gc.isenabled()
    result = CliRunner().invoke(app, ["show", "operation", "rope", "--database", f"sqlite:///{tmp_path / 'c.sqlite'}"])
    assert result.exit_code == 1 and "holds no runs" in result.output
    assert gc.isenabled()
