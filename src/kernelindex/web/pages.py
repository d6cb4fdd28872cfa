"""HTML routes. Each page renders the ``to_json()`` of a read model — the very object its JSON twin
under ``/api/v1`` serves — so the page and the API cannot disagree (DESIGN §1.6)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
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


# --- read-model plumbing --------------------------------------------------------------------------


def now_of(request: Request) -> datetime:
    return request.app.state.clock()


@contextmanager
def page_errors() -> Iterator[None]:
    """Translate read-model errors into helpful 404 / clear 400 pages."""
    from kernelindex.readmodel.loading import NotFound
    from kernelindex.readmodel.operations import BadSelection
    from kernelindex.readmodel.pages_common import BadParameter

    try:
        yield
    except NotFound as exc:
        raise not_found(str(exc)[:300] + ".") from None
    except BadSelection as exc:
        raise bad_request(str(exc), [{"parameter": "workload/cohort", "message": str(exc)}]) from None
    except BadParameter as exc:
        raise bad_request(f"The value of {exc.parameter!r} cannot be used.",
                          [{"parameter": exc.parameter, "message": exc.message}]) from None


def html_cached(request: Request, key: tuple[Any, ...], build: Callable[[], HTMLResponse]) -> HTMLResponse:
    """Rendered pages are cached per catalog version and day (staleness moves by days)."""
    day = now_of(request).date().isoformat()
    body, status = cached(request, ("html", day, *key), lambda: _body(build()))
    return HTMLResponse(body, status_code=status)


def _body(response: HTMLResponse) -> tuple[bytes, int]:
    return bytes(response.body), response.status_code


def source_info(request: Request) -> dict[str, dict[str, Any]]:
    from kernelindex.readmodel.pages_home import _sources

    def compute() -> dict[str, dict[str, Any]]:
        return {s.name: s.to_json() for s in _sources(catalog_of(request))}

    return cached(request, ("source-info",), compute)


# --- operation page -------------------------------------------------------------------------------


def _known_operation(request: Request, slug: str) -> None:
    from kernelindex.readmodel.loading import operation_slugs

    slugs = cached(request, ("operation-slugs",), lambda: sorted(operation_slugs(catalog_of(request))))
    if slug not in slugs:
        from difflib import get_close_matches

        close = get_close_matches(slug, slugs, n=3, cutoff=0.5)
        raise not_found(f"There is no operation {slug!r}.",
                        [{"url": f"/operations/{s}", "label": f"/operations/{s}"} for s in close])


@router.get("/operations/{slug}", response_class=HTMLResponse)
def operation_route(request: Request, slug: str) -> Response:
    reject_unknown_params(request, {"workload", "cohort"})
    workload = single_param(request, "workload", KEY)
    cohort = single_param(request, "cohort", KEY)
    _known_operation(request, slug)

    def build() -> HTMLResponse:
        from kernelindex.readmodel.operations import operation_page

        with page_errors():
            page = operation_page(catalog_of(request), slug, workload=workload, cohort=cohort, now=now_of(request))
        return render_operation(page.to_json(), source_info(request))

    return html_cached(request, ("operation", slug, workload, cohort), build)


def render_operation(data: dict[str, Any], sources: dict[str, dict[str, Any]]) -> HTMLResponse:
    from kernelindex.web.charts import ChartError, render_scaling_svg

    svg, xs = None, []
    if data.get("scaling"):
        try:
            svg = render_scaling_svg(data["scaling"])
        except ChartError:
            data = {**data, "scaling": None}
        xs = sorted({p["x"] for s in data["scaling"]["series"] for p in s["points"]}) if svg else []
    return render("operation.html", page=data, json_url=data.get("json_url"), scaling_svg=svg or "",
                  chart_xs=xs, source_info=sources, nav="search")
