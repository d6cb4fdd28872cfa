"""``ki use QUERY``: a query → one exact workload on one GPU → the read model's recommendation.

The resolver finds the workloads the query names (on any GPU, so an unmeasured GPU still has a
workload); exactly one must match, otherwise the answer lists the candidates (or the nearest measured
shapes) with a query for each. The recommendation itself is computed in
:mod:`kernelindex.readmodel.recommend`, once, for every surface.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kernelindex.catalog.db import Catalog
from kernelindex.readmodel.operation_model import recommend
from kernelindex.resolve.grammar import MAX_QUERY_CHARS, parse_query
from kernelindex.resolve.interpret import canonical_query
from kernelindex.resolve.request import ResolveRequest
from kernelindex.resolve.resolver import resolve
from kernelindex.resolve.results import CohortResult, Resolution
from kernelindex.resolve.service import Refusal
from kernelindex.resolve.source import CatalogCohortSource


def use_text(catalog: Catalog, text: str, *, now: datetime) -> dict[str, Any] | Refusal:
    if len(text) > MAX_QUERY_CHARS:
        return Refusal(f"The query is {len(text)} characters long; queries are at most "
                            f"{MAX_QUERY_CHARS}.", [{"field": "q", "message": "too long"}])
    source = CatalogCohortSource(catalog)
    parsed = parse_query(text, source.vocabulary())
    return use_request(catalog, parsed.request, parsed=parsed.to_json(), now=now)


def use_request(catalog: Catalog, request: ResolveRequest, *, parsed: dict[str, Any] | None = None,
                now: datetime) -> dict[str, Any] | Refusal:
    """The recommendation for a normalised request, or why there is none for exactly one workload."""
    if not request.operation:
        return _missing("operation", "Name an operation (rope, embedding, rms norm …): `ki use` answers for one "
                        "exact workload.", parsed)
    if not request.gpu:
        return _missing("gpu", "Name a GPU (a100, h100, h200, b200 …): `ki use` answers for one GPU.", parsed)
    source = CatalogCohortSource(catalog)
    anywhere = request.model_copy(update={"gpu": None, "arch": None, "mode": None})
    resolution = resolve(anywhere, source, now=now)
    workloads = _workloads(resolution)
    base = {"query": parsed, "canonical_query": canonical_query(request, source.vocabulary())}
    if len(workloads) == 1:
        cohort = next(iter(workloads.values()))
        answer = recommend(catalog, request.operation, cohort.workload_key, request.gpu, mode=request.mode, now=now)
        return {**base, "status": answer.status, "message": answer.message, "recommendation": answer.to_json(),
                "choices": []}
    if workloads:
        choices = [_choice(request, c, source) for c in workloads.values()]
        return {**base, "status": "choose_workload", "choices": choices, "recommendation": None,
                "message": f"{len(choices)} workloads match; bind more axes (or a dtype) to pick one."}
    return {**base, "status": "no_exact_workload", "message": resolution.message,
            "choices": _nearest(request, resolution, source), "recommendation": None}


def _workloads(resolution: Resolution) -> dict[str, CohortResult]:
    found: dict[str, CohortResult] = {}
    for cohort in resolution.exact:
        found.setdefault(cohort.workload_key, cohort)
    return found


def _choice(request: ResolveRequest, cohort: CohortResult, source: CatalogCohortSource) -> dict[str, Any]:
    dtypes = sorted(set(cohort.dtypes.values()))
    update: dict[str, Any] = {"axes": dict(cohort.axes)}
    if len(dtypes) == 1:
        update["dtype"] = dtypes[0]
    query = canonical_query(request.model_copy(update=update), source.vocabulary())
    return {"workload": cohort.workload_ref, "axes": dict(cohort.axes), "dtypes": dict(cohort.dtypes), "query": query}


def _nearest(request: ResolveRequest, resolution: Resolution, source: CatalogCohortSource) -> list[dict[str, Any]]:
    """The measured shapes on either side of an unmeasured one, as queries on the asked GPU."""
    nearest = resolution.nearest
    if nearest is None:
        return []
    sides = [n for n in (nearest.below, nearest.above) if n]
    return [{"axis": nearest.axis, "value": n.value,
             "query": canonical_query(request.model_copy(update={"axes": {**request.axes, nearest.axis: n.value}}),
                                      source.vocabulary())} for n in sides]


def _missing(field: str, detail: str, parsed: dict[str, Any] | None) -> Refusal:
    """What is missing, plus the query's own problems (a misspelt ``gpuu:a100`` is why the GPU is missing)."""
    issues = (parsed or {}).get("issues") or []
    errors: list[dict[str, Any]] = [{"field": field, "message": "missing"}]
    for issue in issues:
        errors.append({"field": "q", "value": issue.get("token"), "message": issue.get("message"),
                       "suggestion": issue.get("suggestion")})
    hints = [f"{i.get('token')!r}: {i.get('message')}" + (f" (try {i['suggestion']})" if i.get("suggestion") else "")
             for i in issues]
    return Refusal(detail + (" Not understood: " + "; ".join(hints) if hints else ""), errors)
