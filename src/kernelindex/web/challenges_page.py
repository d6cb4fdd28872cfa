"""/challenges: one page of the challenges view plus the measurement requests, which are not catalog
data and do not move the catalog version (they are held as ``readmodel.requests.held_requests`` reads
them, and the answer is kept by what it shows of them). The page table declares the view; this is its
HTML page's own endpoint."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import Request
from starlette.responses import HTMLResponse, Response

from kernelindex import urls
from kernelindex.services import reads
from kernelindex.views.table import View
from kernelindex.web.pages import canonical_link, catalog_of, html_with_etag, now_of, page_errors, query_of
from kernelindex.web.render import render

Renderer = Callable[[Request, dict[str, Any], dict[str, Any]], HTMLResponse]
def _asked(request: Request) -> int | None:
    """The request just filed through the form (``?asked=``), highlighted in the listing."""
    asked = request.query_params.get("asked", "")
    return int(asked) if asked.isdigit() and len(asked) < 10 else None


def render_challenges(request: Request, args: dict[str, Any], data: dict[str, Any]) -> HTMLResponse:
    """The page: the view's data, with the live request listing the endpoint read for this request."""
    number = int(args["page"] or 1)
    json_url = urls.with_query(urls.api(urls.CHALLENGES), [("page", number if number > 1 else None)])
    return render("challenges.html", page=data, nav="challenges", json_url=json_url,
                  requests=request.state.requests_listing, asked=_asked(request))


def endpoint(view: View, render_page: Renderer) -> Callable[[Request], Response]:
    def challenges_with_requests(request: Request) -> Response:
        now, catalog = now_of(request), catalog_of(request)
        kept = {k: v for k, v in query_of(request).items() if k in ("page", "asked")}
        with page_errors(request):
            args = view.arguments(None, view.known(kept))
        request.state.requests_listing = reads.held_measurement_requests(catalog, now)

        def build() -> HTMLResponse:
            with page_errors(request):  # a page past the last is refused here
                data = view.data(catalog, now, args)
            return render_page(request, args, data)

        # The whole answer is kept by the answer cache, by the catalog version and what it shows of the
        # requests (web/answer_scope.py's live_scope): a new, claimed or finished request shows at once.
        # Browsers and proxies check it (ETag) on every use: a request filed elsewhere must not wait out a max-age.
        return html_with_etag(request, build, {"cache-control": "no-cache", **canonical_link(request, kept)})

    return challenges_with_requests
