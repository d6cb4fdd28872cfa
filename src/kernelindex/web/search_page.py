"""The search view's page: the resolver's answer (its JSON twin is the API's search), or without a
query the operations by family."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from fastapi import Request
from starlette.responses import HTMLResponse

from kernelindex import urls
from kernelindex.services import reads
from kernelindex.web.pages import catalog_of
from kernelindex.web.render import render


def _fixes(text: str, issues: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each issue with a link to the query where its token is replaced by the suggestion."""
    out = []
    for issue in issues:
        fixed = None
        if issue.get("suggestion"):
            fixed = text[: issue["start"]] + issue["suggestion"] + text[issue["end"]:]
        out.append({**issue, "fix_url": urls.search(fixed) if fixed else None, "fixed": fixed})
    return out


def _families(request: Request) -> list[tuple[str, list[dict[str, Any]]]]:
    operations = reads.operations(catalog_of(request))
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for op in operations:
        grouped[op["family"]].append(op)
    return sorted(grouped.items())


def render_search(request: Request, args: dict[str, Any], data: dict[str, Any]) -> HTMLResponse:
    """The resolution as a page; without a query (the view's blank form), the operations by family."""
    q = args["q"] or ""
    json_url = urls.with_query(urls.api(urls.SEARCH), [("q", q)])
    if not data:
        return render("search/search.html", nav="search", search_query="", json_url=json_url, q="",
                      families=_families(request), result=None, issues=[])
    return render("search/search.html", nav="search", search_query=q, json_url=json_url, q=q, families=None,
                  result=data, issues=_fixes(q, data["query"]["issues"]), search_url=urls.search)
