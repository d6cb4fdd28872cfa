"""What the extras of views/extras.py compute from a built page (imported when a page is built or its API
documented, not when the declarations are read)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kernelindex import urls
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.model_challenges import ModelCallChallenge, model_call_challenges
from kernelindex.readmodel.operation_model import recommend_for_cohort
from kernelindex.readmodel.recommend import Recommendation
from kernelindex.resolve.interpret import canonical_query
from kernelindex.resolve.request import ResolveRequest


@dataclass
class UseBox(JsonModel):
    """The operation page's "Use this" box: the recommendation for the selected cohort's workload, GPU
    and timed region, with the query that asks ``ki use`` / ``GET /api/v1/use`` the same question."""

    answer: Recommendation
    query: str
    json_url: str


def use_box(catalog: Any, data: dict[str, Any], now: datetime) -> dict[str, Any] | None:
    """None without a selected cohort, or when its GPU is not in the datasheet table."""
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
    return {"answer": use, "query": query, "json_url": urls.with_query(urls.api(urls.USE), [("q", query)])}



def model_calls(catalog: Any, data: dict[str, Any], now: datetime) -> list[dict[str, Any]]:
    """The challenges page's calls of popular models with no figure on the first priority GPU (issue 49)."""
    return [c.to_json() for c in model_call_challenges(catalog, now)]



MODEL_CALLS_TYPE = list[ModelCallChallenge]
