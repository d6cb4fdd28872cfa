"""What the HTML pages share: reading a request for a view, the error page, the content ETag, and the
renderers of the page table's views (``web/view_routes.py`` mounts them); plus /gpus and /docs."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from difflib import get_close_matches
from functools import cache
from importlib import resources
from typing import Any, NoReturn
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from markdown_it import MarkdownIt
from markupsafe import Markup
from mdit_py_plugins.anchors import anchors_plugin
from mdit_py_plugins.anchors.index import slugify
from starlette.responses import HTMLResponse, Response

from kernelindex import registry, urls
from kernelindex.readmodel.errors import CohortMoved
from kernelindex.services import reads
from kernelindex.services.problems import READ_ERRORS, Problem, read_refusal
from kernelindex.views.table import VIEW, View
from kernelindex.web.answer_scope import keeps_answers
from kernelindex.web.charts import ChartError, render_scaling_svg
from kernelindex.web.render import ErrorPage, PageError, render

router = APIRouter(include_in_schema=False)


def catalog_of(request: Request) -> Any:
    return request.app.state.catalog


def now_of(request: Request) -> datetime:
    return request.app.state.clock()


def query_of(request: Request) -> dict[str, list[str]]:
    return {name: request.query_params.getlist(name) for name in request.query_params}


def canonical_link(request: Request, kept: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """A ``Link: rel=canonical`` header naming the page without the parameters it ignored (none when
    it ignored nothing). Pages take links shared with tracking parameters; the URL they stand for is this."""
    if set(request.query_params) <= set(kept):
        return {}
    pairs = [(name, value) for name, values in kept.items() for value in values]
    url = request.url.path + (f"?{urlencode(pairs)}" if pairs else "")
    return {"link": f'<{url}>; rel="canonical"'}


def json_twin(request: Request, path: str, takes: Iterable[str]) -> str:
    """The JSON twin's URL with the page's own parameters (those it ignored would be a 400 there)."""
    names = set(takes)
    pairs = [(name, value) for name, value in request.query_params.multi_items() if name in names]
    return f"{path}?{urlencode(pairs)}" if pairs else path


def suggestions_for_path(request: Request) -> list[dict[str, str]]:
    """For a 404: operations whose slug resembles the last path segment."""
    segment = request.url.path.rstrip("/").rsplit("/", 1)[-1].lower()
    if not segment:
        return []
    close = get_close_matches(segment, sorted(registry.operations()), n=3, cutoff=0.5)
    return [{"url": urls.operation(s), "label": urls.operation(s)} for s in close]


@contextmanager
def page_errors(request: Request) -> Iterator[None]:
    """What a read refuses becomes the helpful error page (services.problems is the one translation)."""
    try:
        yield
    except CohortMoved:
        raise  # the route answers a redirect (moved_cohort)
    except READ_ERRORS as exc:
        problem_page(request, read_refusal(exc))


def problem_page(request: Request, problem: Problem) -> NoReturn:
    """A service's Problem as the helpful error page."""
    title = "Not found" if problem.status == 404 else "Bad request"
    problems = [{"parameter": e["field"], "message": e["message"]} for e in problem.errors]
    suggestions = suggestions_for_path(request) if problem.status == 404 else []
    raise PageError(ErrorPage(problem.status, title, problem.detail, problems, suggestions)) from None


def html_with_etag(request: Request, build: Callable[[], HTMLResponse],
                   headers: Mapping[str, str] | None = None) -> Response:
    """A rendered page with a content ETag, or a 304 when the client already holds it. Rendering once per
    catalog version and day is the answer cache's work (web/answer_cache.py keeps the finished answer)."""
    body, status, etag = _body(build())
    if status == 200 and etag in _if_none_match(request):
        return Response(status_code=304, headers={"etag": etag, **(headers or {})})
    return HTMLResponse(body, status_code=status, headers={"etag": etag, **(headers or {})} if status == 200 else None)


def _if_none_match(request: Request) -> set[str]:
    header = request.headers.get("if-none-match", "")
    return {tag.strip() for tag in header.split(",") if tag.strip()}


def _body(response: HTMLResponse) -> tuple[bytes, int, str]:
    body = bytes(response.body)
    return body, response.status_code, f'W/"{hashlib.sha256(body).hexdigest()[:20]}"'


def alias_redirect(request: Request, canonical: str, kept: Mapping[str, Sequence[str]]) -> Response:
    """A page reached by another name for its subject (``/gpus/H200``) moves to its canonical URL,
    relative, keeping the page's own parameters (308: the same request, permanently elsewhere)."""
    path = request.url.path.rsplit("/", 1)[0] + "/" + quote(canonical, safe="")
    pairs = [(name, value) for name, values in kept.items() for value in values]
    return Response(status_code=308, headers={"location": path + (f"?{urlencode(pairs)}" if pairs else "")})


def moved_cohort(request: Request, key: str) -> Response:
    """A link with a cohort key an earlier rule gave the cohort moves, permanently, to the same URL with its
    key now (relative, the other parameters kept): shared links keep working (issue 46 item 7)."""
    pairs = [(name, key if name == "cohort" else value) for name, value in request.query_params.multi_items()]
    return Response(status_code=301, headers={"location": f"{request.url.path}?{urlencode(pairs)}"})


SITE_WIDE = ("home", "records", "challenges")  # the pages that read every operation's summary


def warm(app: Any) -> None:
    """Compute what the site-wide pages read (their default arguments), so the first visitor does not wait
    for it: with every bundled source every operation's summary, each operation's part of the records
    ledger and of the challenges (minutes of CPU cold, 70,000 cohorts), against a projection of them once
    kept. The finished answers themselves are kept by the web's answer cache on their first request."""
    catalog, now = app.state.catalog, app.state.clock()
    for name in SITE_WIDE:
        VIEW[name].data(catalog, now, VIEW[name].arguments(None, {}))


# --- the pages' templates -------------------------------------------------------------------------


def render_operation(data: dict[str, Any]) -> HTMLResponse:
    """The operation page, its use box (the view's ``use`` extra) in the template's own names."""
    use = data.get("use") or {}
    svg, xs = None, []
    if data.get("scaling"):
        try:
            svg = render_scaling_svg(data["scaling"])
        except ChartError:
            data = {**data, "scaling": None}
        xs = sorted({p["x"] for s in data["scaling"]["series"] for p in s["points"]}) if svg else []
    return render("operation.html", page=data, json_url=data.get("json_url"), scaling_svg=svg or "",
                  chart_xs=xs, nav="search", axis_names=axis_names(data), use=use.get("answer"),
                  use_query=use.get("query"), use_json_url=use.get("json_url"))


def axis_names(data: dict[str, Any]) -> list[str]:
    """The operation's axis order, as the workload labels spell it ("seq = 2048 · hidden = 8192 · …")."""
    workloads = data.get("workloads") or []
    if not workloads:
        return []
    named = [part.split(" = ", 1)[0] for part in workloads[0]["label"].split(" · ") if " = " in part]
    return [n for n in named if n in workloads[0]["axes"]] + sorted(set(workloads[0]["axes"]) - set(named))


def render_home(request: Request, args: dict[str, Any], data: dict[str, Any]) -> HTMLResponse:
    return render("home.html", page=data)


def render_operation_page(request: Request, args: dict[str, Any], data: dict[str, Any]) -> HTMLResponse:
    return render_operation(data)


def render_run(request: Request, args: dict[str, Any], data: dict[str, Any]) -> HTMLResponse:
    text = json.dumps(data["manifest"], indent=2, sort_keys=True, ensure_ascii=False)
    return render("run.html", run=data, manifest_text=text, json_url=urls.api(urls.run(args["run_id"])))


def render_compare(request: Request, args: dict[str, Any], data: dict[str, Any]) -> HTMLResponse:
    runs = args["run"]
    twin: str | None = None
    if data and data.get("sweep"):  # the twin of what the page shows, with the region and GPU it chose
        twin = urls.api(data["sweep"]["url"])
    elif data:
        twin = urls.api(urls.compare(runs))
    return render("compare.html", page=data or None, prefill=runs, json_url=twin, prefill_impl=args["impl"],
                  prefill_gpu=args["gpu"])


def with_twin(view: View, **context: Any) -> Callable[[Request, dict[str, Any], dict[str, Any]], HTMLResponse]:
    """A renderer that passes the view's data as ``page`` and links its JSON twin with the page's parameters."""
    return lambda request, args, data: render(
        view.template, page=data, json_url=json_twin(request, view.api_path.format(**args), args), **context)


@keeps_answers
@router.get(urls.GPUS, response_class=HTMLResponse)
def gpus_route(request: Request) -> Response:
    response = render("gpus.html", entries=reads.gpus(catalog_of(request)), json_url=urls.api(urls.GPUS))
    response.headers.update(canonical_link(request, {}))
    return response


# --- methodology ----------------------------------------------------------------------------------


@cache
def runner_doc_html() -> tuple[str, tuple[tuple[str, str], ...]]:
    """The runner's documentation (package data ``kernelindex/data/docs/runner.md``) as HTML, and its
    sections as (id, title) for the page's contents. Headings get ids from their titles, prefixed
    "runner-" so they never meet the page's own ids (stable while a title stays; /docs#runner-timing)."""
    text = resources.files("kernelindex.data").joinpath("docs", "runner.md").read_text(encoding="utf-8")
    text = re.sub(r"^# .*\n", "", text, count=1)  # the page already has the section heading
    md = MarkdownIt("commonmark", {"html": False}).enable("table").use(
        anchors_plugin, min_level=2, max_level=3, slug_func=lambda title: "runner-" + slugify(title))
    tokens = md.parse(text)
    sections = tuple((str(t.attrs["id"]), "".join(c.content for c in tokens[i + 1].children or ()))
                     for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag == "h2")
    html = md.renderer.render(tokens, md.options, {})
    # Wide tables and code scroll inside their own focusable container (phones, keyboard users).
    count = iter(range(1, 1000))
    html = re.sub("<table>", lambda _: f'<div class="table-wrap" tabindex="0" role="region" '
                  f'aria-label="Runner table {next(count)}"><table>', html).replace("</table>", "</table></div>")
    return html.replace("<pre>", '<pre tabindex="0">'), sections


@keeps_answers
@router.get(urls.DOCS, response_class=HTMLResponse)
def docs_page(request: Request) -> Response:
    runner_doc, runner_sections = runner_doc_html()
    response = render("docs.html", nav="docs", runner_doc=Markup(runner_doc), runner_sections=runner_sections,
                      source_policies=list(registry.source_policies().values()))
    response.headers.update(canonical_link(request, {}))
    return response
