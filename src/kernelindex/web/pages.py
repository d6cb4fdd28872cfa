"""HTML routes. Each page renders the ``to_json()`` of a read model — the very object its JSON twin
under ``/api/v1`` serves — so the page and the API cannot disagree (DESIGN §1.6)."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse, Response

from kernelindex.web.render import bad_request, not_found, render

router = APIRouter(include_in_schema=False)

SLUG = re.compile(r"^[a-z0-9][a-z0-9._-]{0,119}$")
RUN_ID = re.compile(r"^[0-9a-f]{6,64}$")
KEY = re.compile(r"^[A-Za-z0-9:._=,+-]{1,200}$")
REPO_ROOT = Path(__file__).resolve().parents[3]


# --- helpers --------------------------------------------------------------------------------------


def catalog_of(request: Request) -> Any:
    return request.app.state.catalog


def cached(request: Request, key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
    """Read models are pure functions of the catalog: cache them per catalog version."""
    catalog = catalog_of(request)
    return request.app.state.cache.get_or_compute(catalog.version(), key, compute)


def single_param(request: Request, name: str, pattern: re.Pattern[str] | None = None) -> str | None:
    """One optional query parameter; repeated or malformed values are a 400, never a 500."""
    values = request.query_params.getlist(name)
    if not values:
        return None
    if len(values) > 1:
        raise bad_request(f"The parameter {name!r} was given {len(values)} times.",
                          [{"parameter": name, "message": "give it once"}])
    value = values[0].strip()
    if value == "":
        return None
    if pattern is not None and not pattern.fullmatch(value):
        raise bad_request(f"The value of {name!r} is not well-formed.",
                          [{"parameter": name, "message": f"{value[:80]!r} does not look like a {name} key"}])
    return value


def reject_unknown_params(request: Request, allowed: set[str]) -> None:
    unknown = sorted(set(request.query_params.keys()) - allowed)
    if unknown:
        expected = ", ".join(sorted(allowed)) or "no parameters"
        raise bad_request(
            "This page does not take " + ", ".join(repr(u) for u in unknown) + f" (it takes {expected}).",
            [{"parameter": u, "message": "unknown parameter"} for u in unknown],
        )


def json_twin(request: Request, path: str) -> str:
    query = request.url.query
    return f"{path}?{query}" if query else path


def suggestions_for_path(request: Request) -> list[dict[str, str]]:
    """For a 404: operations whose slug resembles the last path segment."""
    segment = request.url.path.rstrip("/").rsplit("/", 1)[-1].lower()
    if not segment:
        return []
    try:
        from kernelindex.registry import operations

        slugs = sorted(operations())
    except Exception:  # the 404 page must render even if the registry cannot load
        return []
    from difflib import get_close_matches

    close = get_close_matches(segment, slugs, n=3, cutoff=0.5)
    return [{"url": f"/operations/{s}", "label": f"/operations/{s}"} for s in close]


# --- methodology ----------------------------------------------------------------------------------


@cache
def runner_doc_html() -> str | None:
    """docs/runner.md (written by the runner engineer) rendered to HTML, when it exists."""
    path = REPO_ROOT / "docs" / "runner.md"
    if not path.is_file():
        return None
    from markdown_it import MarkdownIt

    text = path.read_text(encoding="utf-8")
    text = re.sub(r"^# .*\n", "", text, count=1)  # the page already has the section heading
    return MarkdownIt("commonmark", {"html": False}).enable("table").render(text)


@router.get("/docs", response_class=HTMLResponse)
def docs_page(request: Request) -> Response:
    reject_unknown_params(request, set())
    from markupsafe import Markup

    doc = runner_doc_html()
    return render("docs.html", nav="docs", runner_doc=Markup(doc) if doc else None)
