"""The operation page's brief (issue 46 item 4): the few of its fields that ``ki show operation`` prints — the
title and count, the headline, the selected cohort's ranked rows and what to read before their ratios —
projected from the same model (``readmodel.operation_model``) and the same selection as the page
(``readmodel.operations.build_operation_page``), each value exactly as the page's JSON holds it. A one-shot
command then derives none of what it does not print (the scaling chart, the shape table, the other dtypes,
the memory panel, the sources, the cohort chooser): on the largest GEMM those were most of its time.

``tests/cli/test_lean_show.py`` holds each field to the page's own, so the two cannot drift."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kernelindex.catalog.db import Catalog
from kernelindex.readmodel.jsonable import to_jsonable
from kernelindex.readmodel.operation_model import model_of
from kernelindex.readmodel.ranking_notes import ranked_statistic
from kernelindex.services.problems import READ_ERRORS, Problem, read_refusal

# The page's fields the brief holds: tests compare each with the operation page's JSON
BRIEF_FIELDS = ("slug", "title", "eligible_runs", "headline", "ranked", "ranking_notes", "cohort_line")


def operation_brief(catalog: Catalog, slug: str, *, workload: str | None = None, cohort: str | None = None,
                    gpu: str | None = None, now: datetime) -> dict[str, Any]:
    """The page's ``BRIEF_FIELDS`` for this selection (``cohort_line`` only with its ``ranked_statistic``)."""
    model = model_of(catalog, slug, now)
    chosen = model.select(workload, cohort, gpu)
    selected = chosen.cohort
    return {
        "slug": model.data.slug,
        "title": model.data.title,
        "eligible_runs": model.eligible_runs,
        "headline": to_jsonable(model.headline(selected) if selected else []),
        "ranked": to_jsonable(model.rows(selected) if selected else []),
        "ranking_notes": to_jsonable(model.ranking_notes(selected, chosen.cohorts)),
        "cohort_line": {"ranked_statistic": ranked_statistic(model.data, selected)} if selected else None,
    }


def brief_answer(catalog: Catalog, slug: str, params: dict[str, Any], now: datetime) -> dict[str, Any] | Problem:
    """The brief for the operation page's own arguments, checked as the page checks them; a refusal as the
    page's (``read_refusal``, the services' one translation of read errors)."""
    from kernelindex.views.params import given_query
    from kernelindex.views.table import VIEW

    try:
        args = VIEW["operation"].arguments(slug, given_query(params))
        return operation_brief(catalog, args.pop("slug"), now=now, **{k: v for k, v in args.items() if k != "page"})
    except READ_ERRORS as exc:
        return read_refusal(exc)
