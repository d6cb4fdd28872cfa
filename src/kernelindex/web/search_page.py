"""``/search?q=``: the resolver's answer as a page (its JSON twin is ``/api/v1/search?q=``).

An empty query browses operations by family."""

from __future__ import annotations

from collections import defaultdict
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse, Response

from kernelindex.readmodel.cache import READ_CACHE
from kernelindex.readmodel.operations import operations_index
from kernelindex.views.table import VIEW
from kernelindex.web.answer_cache import keeps_answers
from kernelindex.web.pages import canonical_link, catalog_of, page_errors, query_of, view_data
from kernelindex.web.render import render

router = APIRouter(include_in_schema=False)


def _search_url(q: str) -> str:
    return "/search?" + urlencode({"q": q})


def _fixes(text: str, issues: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each issue with a link to the query where its token is replaced by the suggestion."""
    out = []
    for issue in issues:
        fixed = None
        if issue.get("suggestion"):
            fixed = text[: issue["start"]] + issue["suggestion"] + text[issue["end"]:]
        out.append({**issue, "fix_url": _search_url(fixed) if fixed else None, "fixed": fixed})
    return out


def _families(request: Request) -> list[tuple[str, list[dict[str, Any]]]]:
    operations = READ_CACHE.get(catalog_of(request), ("search-families",),
                                lambda: [o.to_json() for o in operations_index(catalog_of(request))])
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for op in operations:
        grouped[op["family"]].append(op)
    return sorted(grouped.items())


@keeps_answers
@router.get("/search", response_class=HTMLResponse)
def search_page(request: Request) -> Response:
    view = VIEW["search"]
    kept = view.known(query_of(request))
    with page_errors(request):
        q = view.arguments(None, kept)["q"] or ""
    json_url = "/api/v1/search" + (f"?{urlencode({'q': q})}" if q else "")
    if not q.strip():
        response = render("search/search.html", nav="search", search_query="", json_url=json_url, q="",
                          families=_families(request), result=None, issues=[])
    else:
        _, result = view_data(request, view)
        response = render("search/search.html", nav="search", search_query=q, json_url=json_url, q=q,
                          families=None, result=result, issues=_fixes(q, result["query"]["issues"]),
                          search_url=_search_url)
    response.headers.update(canonical_link(request, kept))
    return response
