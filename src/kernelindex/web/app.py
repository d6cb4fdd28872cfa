"""The FastAPI application: HTML pages, the JSON API (when present), static files, hardening."""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable, MutableMapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from functools import partial
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.routing import Match

from kernelindex import urls
from kernelindex.services.problems import CODE_OF_STATUS, Problem
from kernelindex.web import api, api_docs, asks, feed, pages, samples_route, view_routes
from kernelindex.web.answer_cache import STALE_FOR_S, VERSION_FRESH_S, AnswerCache
from kernelindex.web.api.problems import problem_response, validation_problem
from kernelindex.web.body_limits import BodyLimit
from kernelindex.web.head import HeadAsGet
from kernelindex.web.render import ErrorPage, PageError, error_response
from kernelindex.web.security import SecurityMiddleware
from kernelindex.web.shared_site_answers import claim_warming
from kernelindex.web.warming import keep_warm

log = logging.getLogger("kernelindex.web")


def _wants_json(request: Request) -> bool:
    return request.url.path.startswith(urls.API + "/")


def _status_problem(status: int, detail: str) -> Problem:
    return Problem(CODE_OF_STATUS.get(status, "bad_request" if status < 500 else "internal_error"), detail)


async def _page_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, PageError)
    if _wants_json(request):
        return problem_response(_status_problem(exc.page.status, exc.page.detail), request.url.path)
    return error_response(exc.page)


def _slash_redirect(request: Request) -> Response | None:
    """``/operations/rope/`` → ``/operations/rope``, when that path is a route: a relative Location,
    so the Host header (which a client controls) never reaches a response."""
    path = request.url.path
    target = path.rstrip("/")
    if not path.endswith("/") or not target.startswith("/") or target.startswith("//"):
        return None
    scope = {**request.scope, "path": target}
    if not any(route.matches(scope)[0] == Match.FULL for route in request.app.router.routes):
        return None
    query = request.url.query
    return RedirectResponse(target + (f"?{query}" if query else ""), status_code=308)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 404 and (redirect := _slash_redirect(request)):
        return redirect
    if _wants_json(request):
        detail = (f"Nothing lives at {request.url.path}; the API is described at {urls.OPENAPI}."
                  if exc.status_code == 404 else str(exc.detail))
        return problem_response(_status_problem(exc.status_code, detail), request.url.path)
    if exc.status_code == 404:
        page = ErrorPage(404, "Not found", f"Nothing lives at {request.url.path}.",
                         suggestions=pages.suggestions_for_path(request))
    else:
        page = ErrorPage(exc.status_code, str(exc.detail), str(exc.detail))
    return error_response(page)


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    if _wants_json(request):
        return problem_response(validation_problem(exc), request.url.path)
    problems = [
        {"parameter": ".".join(str(p) for p in err.get("loc", ())[1:]) or "request", "message": err.get("msg", "")}
        for err in exc.errors()
    ]
    return error_response(ErrorPage(400, "Bad request", "Some query parameters could not be read.", problems))


SERVER_ERROR_DETAIL = ("The server failed while answering this request; the error is logged with its "
                       "traceback. Try again, and if it persists report the address and the time.")


def _crash_response(scope: MutableMapping[str, Any]) -> Response:
    """What an error no handler caught answers: the API's problem+json, or the site's error page."""
    if str(scope.get("path", "")).startswith(urls.API + "/"):
        return problem_response(Problem("internal_error", SERVER_ERROR_DETAIL), str(scope.get("path", "")))
    return error_response(ErrorPage(500, "Server error", SERVER_ERROR_DETAIL))


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _lifespan(warm: bool) -> Callable[[FastAPI], Any]:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        from kernelindex.web.mcp_server.http import mcp_running

        stop = threading.Event()
        if warm:  # at start, then after every publication (see web/warming.py)
            catalog = app.state.catalog
            args = (catalog.version, lambda: app.state.clock().date(), lambda: pages.warm(app), stop, None,
                    partial(claim_warming, catalog))
            threading.Thread(target=keep_warm, args=args, daemon=True, name="kernelindex-warm").start()
        try:
            async with mcp_running(app):
                if where := os.environ.get("KERNELINDEX_SERVING_ON"):  # set by ki serve (cli/serve_cmd.py)
                    print(f"Serving on {where}", file=sys.stderr, flush=True)
                yield
        finally:
            stop.set()

    return lifespan


def create_app(catalog: Any | None = None, *, clock: Callable[[], datetime] | None = None,
               warm: bool = False, stale_for_s: float = 0.0) -> FastAPI:
    """Build the app over ``catalog`` (opened from the configured URL when not given).

    ``clock`` is the injectable "now" for staleness and "last observed" (tests pin it); ``warm``
    loads the read models in a background thread at startup (``ki serve`` workers do);
    ``stale_for_s``: how long a site-wide answer may be served after a newer catalog version was seen,
    while the new one is computed in the background (web/answer_cache.py; ``ki serve``: STALE_FOR_S).
    """
    if catalog is None:
        from kernelindex.catalog.db import open_catalog

        catalog = open_catalog()
    app = FastAPI(
        title="KernelIndex",
        summary="The fastest known GPU kernel for an exact workload, with its evidence.",
        docs_url=None,  # /api/docs is web/api_docs.py: FastAPI's page needs a CDN and an inline script
        redoc_url=None,
        redirect_slashes=False,  # Starlette's builds an absolute URL from the Host header; _slash_redirect
        openapi_url=urls.OPENAPI,
        # /api/docs lists the reads people come for before the write path and the runners' routes
        openapi_tags=[{"name": "v1", "description": "Read the catalog: no key needed."},
                      {"name": "v1 write path", "description": "Uploads, measurement requests and runners: "
                                                               "API keys with a scope (docs/fleet.md)."}],
        lifespan=_lifespan(warm),
    )
    app.state.catalog = catalog
    app.state.clock = clock or _utc_now
    app.state.stale_for_s = stale_for_s
    app.add_middleware(AnswerCache)  # innermost of the three: HEAD arrives as GET, headers are added outside
    app.add_middleware(HeadAsGet)
    app.add_middleware(BodyLimit, routes_of=app)  # before any body is buffered; its 413 gets the headers
    app.add_middleware(SecurityMiddleware, on_error=_crash_response)  # outermost: it sees every answer
    app.add_exception_handler(PageError, _page_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.include_router(api.router)
    app.include_router(api_docs.router)
    app.include_router(samples_route.router)
    app.include_router(asks.router)
    app.include_router(feed.router)
    app.include_router(view_routes.router)  # every view's page (its JSON twin is in api.router)
    app.include_router(pages.router)
    from kernelindex.web.mcp_server.http import mount_mcp

    mount_mcp(app)  # /mcp: the MCP server over streamable HTTP (docs/agents.md)
    api_docs.mount_assets(app)  # /static/swagger-ui, before /static
    app.mount(urls.STATIC, StaticFiles(packages=[("kernelindex.web", "static")]), name="static")
    return app


def create_app_from_environment() -> FastAPI:
    """Import-string factory for uvicorn workers (``kernelindex.web.app:create_app_from_environment``).

    ``ki serve`` has already migrated the schema and imported the bundled data before starting
    workers, so workers only open the catalog named by ``KERNELINDEX_DATABASE_URL``.
    """
    from kernelindex.catalog.db import open_catalog

    catalog = open_catalog(migrate_schema=False)
    catalog.version_fresh_s = VERSION_FRESH_S  # another worker's publication shows within that long
    return create_app(catalog, warm=True, stale_for_s=STALE_FOR_S)
