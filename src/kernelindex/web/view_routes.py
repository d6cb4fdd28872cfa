"""Every view of the page table mounted with its HTML page; its JSON twin and CSV are mounted from the
same declaration on the API's router (``web/api/twins.py``). A page renders ``view.data()`` — the
very data its twin serves — through the renderer named here for its view."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse, Response

from kernelindex.readmodel.errors import CohortMoved
from kernelindex.views.table import VIEW, VIEWS, View
from kernelindex.web import challenges_page, pages, search_page
from kernelindex.web.answer_scope import keeps_answers
from kernelindex.web.pages import (
    alias_redirect,
    canonical_link,
    catalog_of,
    html_with_etag,
    moved_cohort,
    now_of,
    page_errors,
    query_of,
)

router = APIRouter(include_in_schema=False)
Renderer = Callable[[Request, dict[str, Any], dict[str, Any]], HTMLResponse]

# view name → renderer(request, checked arguments, the view's data), looked up on each request; a view without
# an entry renders its template with its data as ``page`` and a link to its JSON twin (pages.with_twin)
RENDERERS: dict[str, Renderer] = {
    "home": pages.render_home,
    "operation": pages.render_operation_page,
    "run": pages.render_run,
    "records": pages.with_twin(VIEW["records"], nav="records"),
    "challenges": challenges_page.render_challenges,
    "compare": pages.render_compare,
    "search": search_page.render_search,
    "models": pages.with_twin(VIEW["models"], nav="models"),
    "model": pages.with_twin(VIEW["model"], nav="models"),
}
# a page whose answer is not a plain function of the view's data has its own endpoint
ENDPOINTS: dict[str, Callable[[View, Renderer], Callable[[Request], Response]]] = {
    "challenges": challenges_page.endpoint,
}


def rendered(view: View) -> Renderer:
    """``view``'s renderer, read when a page is rendered (tests wrap it to see the data it was given)."""
    return lambda request, args, data: renderer_of(view)(request, args, data)


def renderer_of(view: View) -> Renderer:
    """The renderer ``view``'s page is rendered by: its entry in RENDERERS, else the plain one."""
    return RENDERERS.get(view.name) or pages.with_twin(view)


def page_endpoint(view: View, render: Renderer) -> Callable[[Request], Response]:
    """The HTML page: arguments checked by the view, data from the view, a content ETag."""

    def endpoint(request: Request) -> Response:
        kept = view.known(query_of(request))
        with page_errors(request):
            subject = request.path_params.get(view.subject.name) if view.subject else None
            args = view.arguments(subject, kept)
        if view.subject is not None and args[view.subject.name] != subject:
            return alias_redirect(request, args[view.subject.name], kept)
        if view.is_blank(args):  # nothing to compute: the page's empty form
            empty_form = render(request, args, {})
            empty_form.headers.update(canonical_link(request, kept))
            return empty_form

        def build() -> HTMLResponse:
            with page_errors(request):
                data = view.data(catalog_of(request), now_of(request), args)
            return render(request, args, data)

        try:
            return html_with_etag(request, build, canonical_link(request, kept))
        except CohortMoved as moved:
            return moved_cohort(request, moved.key)

    return endpoint


def mount_page(view: View, on: APIRouter = router) -> None:
    """Mount ``view``'s HTML page at its path (on the site's router)."""
    endpoint = ENDPOINTS.get(view.name, page_endpoint)(view, rendered(view))
    endpoint.__name__ = f"{view.name}_page"
    keeps_answers(endpoint, scope=view.cache)
    on.add_api_route(view.path, endpoint, methods=["GET"], response_class=HTMLResponse)


for _view in VIEWS:
    mount_page(_view)
