"""The operation page's "Use this" box: the read model's recommendation for the selected cohort's
workload and GPU, with the query that asks ``ki use`` / ``GET /api/v1/use`` the same question."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from kernelindex.readmodel.recommend import recommend_for_cohort
from kernelindex.resolve.interpret import canonical_query
from kernelindex.resolve.request import ResolveRequest


def use_box(catalog: Any, data: dict[str, Any], now: Any) -> dict[str, Any] | None:
    """Template variables ``use``, ``use_query``, ``use_json_url`` (None without a selected cohort)."""
    cohort = data.get("selected_cohort")
    if not cohort:
        return None
    recommendation = recommend_for_cohort(catalog, data["slug"], cohort, now=now)
    if recommendation is None:
        return None
    use = recommendation.to_json()
    dtypes = sorted(set(use["workload"]["dtypes"].values()))
    request = ResolveRequest(operation=data["slug"], axes=use["workload"]["axes"],
                             dtype=dtypes[0] if len(dtypes) == 1 else None, gpu=use["gpu"]["slug"], mode=use["mode"])
    query = canonical_query(request)
    return {"use": use, "use_query": query, "use_json_url": "/api/v1/use?" + urlencode({"q": query})}
