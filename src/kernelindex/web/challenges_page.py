"""/challenges: one page of the challenges view (cached per catalog version) plus the measurement
requests, read live: requests are not catalog data and do not move the catalog version, and their
ages tick. The page table declares the view; this is its HTML page's own endpoint."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from fastapi import Request
from starlette.responses import HTMLResponse, Response

from kernelindex import urls
from kernelindex.readmodel.cache import READ_CACHE
from kernelindex.readmodel.requests import requests_listing
from kernelindex.views.table import View
from kernelindex.web.pages import canonical_link, catalog_of, now_of, page_errors, query_of
from kernelindex.web.render import render

Renderer = Callable[[Request, dict[str, Any], dict[str, Any]], HTMLResponse]
_CHALLENGES_KEY = ("html", "challenges+requests")


def challenges_key(page: int) -> tuple[str, str, int]:
    """The rendered-body slot of one page of /challenges (only pages that exist get one: a build that
    refuses its page is not kept)."""
    return (*_CHALLENGES_KEY, page)


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
        request.state.requests_listing = listing = requests_listing(catalog, now)
        number = int(args["page"] or 1)  # one body per page, whatever else is asked

        def build() -> bytes:
            with page_errors(request):  # a page past the last is refused here, and nothing is kept
                data = view.data(catalog, now, args)
            return bytes(render_page(request, args, data).body)

        # One page took ~60 ms to render when it was the whole ~1 MB list. Each page's rendered body is kept
        # with the catalog version in its own slot (one per page that exists: the page number is checked before
        # and the build refuses a page past the last), with what it was rendered for (day, `asked`, the live
        # request listing with its ticking ages): a new, claimed or finished request shows at once, and ages
        # and arbitrary `asked` values never add slots.
        key = challenges_key(number)
        rendered_for = (now.date().isoformat(), _asked(request), orjson.dumps(listing, default=str))
        kept_for, body = READ_CACHE.get(catalog, key, lambda: (rendered_for, build()))
        if kept_for != rendered_for:
            READ_CACHE.discard(lambda k: k == key)
            kept_for, body = READ_CACHE.get(catalog, key, lambda: (rendered_for, build()))
        if kept_for != rendered_for:  # another request re-filled the slot for other arguments meanwhile
            body = build()
        return HTMLResponse(body, headers={"cache-control": "no-store", **canonical_link(request, kept)})

    return challenges_with_requests
