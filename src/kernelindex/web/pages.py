"""HTML routes. Each page renders the ``to_json()`` of a read model — the very object its JSON twin
under ``/api/v1`` serves — so the page and the API cannot disagree (DESIGN §1.6)."""

from __future__ import annotations

import hashlib
import json
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
    html = MarkdownIt("commonmark", {"html": False}).enable("table").render(text)
    # Wide tables and code scroll inside their own focusable container (phones, keyboard users).
    count = iter(range(1, 1000))
    html = re.sub("<table>", lambda _: f'<div class="table-wrap" tabindex="0" role="region" '
                  f'aria-label="Runner table {next(count)}"><table>', html).replace("</table>", "</table></div>")
    return html.replace("<pre>", '<pre tabindex="0">')


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


def html_cached(request: Request, key: tuple[Any, ...], build: Callable[[], HTMLResponse]) -> Response:
    """Rendered pages are cached per catalog version and day (staleness moves by days), with a
    content ETag so browsers and proxies can revalidate with a 304."""
    day = now_of(request).date().isoformat()
    body, status, etag = cached(request, ("html", day, *key), lambda: _body(build()))
    if status == 200 and etag in _if_none_match(request):
        return Response(status_code=304, headers={"etag": etag})
    return HTMLResponse(body, status_code=status, headers={"etag": etag} if status == 200 else None)


def _if_none_match(request: Request) -> set[str]:
    header = request.headers.get("if-none-match", "")
    return {tag.strip() for tag in header.split(",") if tag.strip()}


def _body(response: HTMLResponse) -> tuple[bytes, int, str]:
    body = bytes(response.body)
    return body, response.status_code, f'W/"{hashlib.sha256(body).hexdigest()[:20]}"'


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
        return render_operation(page.to_json())

    return html_cached(request, ("operation", slug, workload, cohort), build)


def render_operation(data: dict[str, Any]) -> HTMLResponse:
    from kernelindex.web.charts import ChartError, render_scaling_svg

    svg, xs = None, []
    if data.get("scaling"):
        try:
            svg = render_scaling_svg(data["scaling"])
        except ChartError:
            data = {**data, "scaling": None}
        xs = sorted({p["x"] for s in data["scaling"]["series"] for p in s["points"]}) if svg else []
    return render("operation.html", page=data, json_url=data.get("json_url"), scaling_svg=svg or "",
                  chart_xs=xs, nav="search", axis_names=axis_names(data))


def axis_names(data: dict[str, Any]) -> list[str]:
    """The operation's axis order, as the workload labels spell it ("seq = 2048 · hidden = 8192 · …")."""
    workloads = data.get("workloads") or []
    if not workloads:
        return []
    named = [part.split(" = ", 1)[0] for part in workloads[0]["label"].split(" · ") if " = " in part]
    return [n for n in named if n in workloads[0]["axes"]] + sorted(set(workloads[0]["axes"]) - set(named))


# --- the other pages ------------------------------------------------------------------------------


def _page_json(request: Request, key: tuple[Any, ...], build: Callable[[], Any]) -> dict[str, Any]:
    """A read model's JSON, cached per catalog version and day; read-model errors become pages."""
    day = now_of(request).date().isoformat()

    def compute() -> dict[str, Any]:
        with page_errors():
            return build().to_json()

    return cached(request, ("json", day, *key), compute)


def warm(app: Any) -> None:
    """Compute the home page's read model into the page cache (same key as the route), so the
    first visitor waits for this computation instead of starting a second one."""
    from kernelindex.readmodel.pages_home import home_page

    catalog, now = app.state.catalog, app.state.clock()
    key = ("json", now.date().isoformat(), "home")
    app.state.cache.get_or_compute(catalog.version(), key, lambda: home_page(catalog, now=now).to_json())


@router.get("/", response_class=HTMLResponse)
def home_route(request: Request) -> Response:
    reject_unknown_params(request, set())
    from kernelindex.readmodel.pages_home import home_page

    def build() -> HTMLResponse:
        page = _page_json(request, ("home",), lambda: home_page(catalog_of(request), now=now_of(request)))
        return render("home.html", page=page)

    return html_cached(request, ("home",), build)


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run_route(request: Request, run_id: str) -> Response:
    reject_unknown_params(request, set())
    if not RUN_ID.fullmatch(run_id):
        raise not_found(f"{run_id[:40]!r} is not a run id: run ids are hex digits (16 on every page).")
    from kernelindex.readmodel.runs import run_dossier

    def build() -> HTMLResponse:
        run = _page_json(request, ("run", run_id),
                         lambda: run_dossier(catalog_of(request), run_id, now=now_of(request)))

        text = json.dumps(run["manifest"], indent=2, sort_keys=True, ensure_ascii=False)
        return render("run.html", run=run, manifest_text=text, json_url=f"/api/v1/runs/{run_id}")

    return html_cached(request, ("run", run_id), build)


@router.get("/implementations/{slug}", response_class=HTMLResponse)
def implementation_route(request: Request, slug: str) -> Response:
    reject_unknown_params(request, set())
    if not SLUG.fullmatch(slug):
        raise not_found(f"{slug[:40]!r} is not an implementation slug.")
    from kernelindex.readmodel.pages_implementations import implementation_page

    def build() -> HTMLResponse:
        page = _page_json(request, ("implementation", slug),
                          lambda: implementation_page(catalog_of(request), slug, now=now_of(request)))
        return render("implementation.html", page=page, json_url=f"/api/v1/implementations/{slug}")

    return html_cached(request, ("implementation", slug), build)


RECORD_PARAMS = ("operation", "gpu", "evidence", "view", "cohort")


@router.get("/records", response_class=HTMLResponse)
def records_route(request: Request) -> Response:
    reject_unknown_params(request, set(RECORD_PARAMS))
    params = {name: single_param(request, name, KEY) for name in RECORD_PARAMS}
    from kernelindex.readmodel.pages_records import records_page

    def build() -> HTMLResponse:
        page = _page_json(request, ("records", *params.values()),
                          lambda: records_page(catalog_of(request), now=now_of(request), **params))
        return render("records.html", page=page, nav="records", json_url=json_twin(request, "/api/v1/records"))

    return html_cached(request, ("records", *params.values()), build)


@router.get("/gpus", response_class=HTMLResponse)
def gpus_route(request: Request) -> Response:
    reject_unknown_params(request, set())
    from kernelindex.readmodel.pages_gpus import gpus_index

    def build() -> HTMLResponse:
        entries = cached(request, ("gpus-index",), lambda: [e.to_json() for e in gpus_index(catalog_of(request))])
        return render("gpus.html", entries=entries, json_url="/api/v1/gpus")

    return html_cached(request, ("gpus",), build)


@router.get("/gpus/{slug}", response_class=HTMLResponse)
def gpu_route(request: Request, slug: str) -> Response:
    reject_unknown_params(request, set())
    if not SLUG.fullmatch(slug):
        raise not_found(f"{slug[:40]!r} is not a GPU slug.")
    from kernelindex.readmodel.pages_gpus import gpu_page

    def build() -> HTMLResponse:
        page = _page_json(request, ("gpu", slug), lambda: gpu_page(catalog_of(request), slug, now=now_of(request)))
        return render("gpu.html", page=page, json_url=f"/api/v1/gpus/{slug}")

    return html_cached(request, ("gpu", slug), build)


@router.get("/challenges", response_class=HTMLResponse)
def challenges_route(request: Request) -> Response:
    reject_unknown_params(request, set())
    from kernelindex.readmodel.pages_challenges import challenges_page

    def build() -> HTMLResponse:
        page = _page_json(request, ("challenges",), lambda: challenges_page(catalog_of(request), now=now_of(request)))
        return render("challenges.html", page=page, nav="challenges", json_url="/api/v1/challenges")

    return html_cached(request, ("challenges",), build)


@router.get("/compare", response_class=HTMLResponse)
def compare_route(request: Request) -> Response:
    reject_unknown_params(request, {"run"})
    runs = [r.strip().lower() for r in request.query_params.getlist("run") if r.strip()]
    bad = [r for r in runs if not RUN_ID.fullmatch(r)]
    if bad:
        raise bad_request("Run ids are hex digits.", [{"parameter": "run", "message": f"{b[:40]!r} is not a run id"}
                                                      for b in bad])
    if len(runs) > 8:
        raise bad_request("Compare takes at most 8 runs.", [{"parameter": "run", "message": f"{len(runs)} given"}])
    if len(runs) < 2:
        return render("compare.html", page=None, prefill=runs, json_url=None)
    from kernelindex.readmodel.pages_compare import compare_page

    def build() -> HTMLResponse:
        page = _page_json(request, ("compare", *runs),
                          lambda: compare_page(catalog_of(request), runs, now=now_of(request)))
        twin = "/api/v1/compare?" + "&".join(f"run={r}" for r in runs)
        return render("compare.html", page=page, prefill=runs, json_url=twin)

    return html_cached(request, ("compare", *runs), build)
