"""The search view's page: the resolver's answer (its JSON twin is the API's search), or without a
query the operations by family."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from fastapi import Request
from starlette.responses import HTMLResponse

from kernelindex import registry, urls
from kernelindex.services import reads
from kernelindex.web.pages import catalog_of
from kernelindex.web.render import render

_STEP_AXES = {"batch": "batch", "batch_size": "batch", "seq": "seq", "ctx": "seq", "context": "seq", "tp": "tp"}


def _fixes(text: str, issues: list[dict[str, Any]], tokens: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each issue with a link to the query where its token is replaced by the suggestion, and a model word's
    link to its model page (with the query's GPU, phase and batch)."""
    out = []
    for issue in issues:
        fixed = None
        if issue.get("suggestion"):
            fixed = text[: issue["start"]] + issue["suggestion"] + text[issue["end"]:]
        out.append({**issue, "fix_url": urls.search(fixed) if fixed else None, "fixed": fixed,
                    "model_url": _model_url(issue, tokens)})
    return out


def _model_url(issue: dict[str, Any], tokens: list[dict[str, Any]]) -> str | None:
    """The model page a MODEL_WORD issue names, for the step the rest of the query describes."""
    slug = registry.model_slug(issue["token"]) if issue["code"] == "MODEL_WORD" else None
    if slug is None:
        return None
    params: list[tuple[str, str | int | None]] = []
    for token in tokens:
        word = token["text"].lower()
        if token["kind"] == "gpu" and token.get("value"):
            params.append(("gpu", token["value"]))
        elif word in ("decode", "prefill"):
            params.append(("phase", word))
        elif token["kind"] == "axis" and word.split("=")[0].split(":")[0] in _STEP_AXES:
            params.append((_STEP_AXES[word.split("=")[0].split(":")[0]], token.get("value")))
    return urls.model(slug, *dict(params).items())


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
                  result=data, issues=_fixes(q, data["query"]["issues"], data["query"]["tokens"]),
                  search_url=urls.search)
