"""REST API v1: the JSON twins of the page table's views (mounted from their declarations by
``twins.mount_twin``), the indexes beside them, resolve and the export. Every endpoint serves the
``to_json()`` of a read model (or the resolver's answer), so the API, the pages and the CLI cannot
disagree."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Request
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.routing import APIRoute
from starlette.routing import Route

from kernelindex import urls
from kernelindex.resolve.request import ResolveRequest
from kernelindex.services import reads
from kernelindex.services.problems import Problem
from kernelindex.views import params
from kernelindex.views.table import VIEWS
from kernelindex.web.answer_scope import keeps_answers
from kernelindex.web.api.agent_routes import register as register_agent_routes
from kernelindex.web.api.pagination import DEFAULT_LIMIT, paginate
from kernelindex.web.api.problems import ProblemRoute, answered, problem_response, problem_responses
from kernelindex.web.api.schemas import ResolutionOut
from kernelindex.web.api.twins import Cursor, Limit, mount_twin, path_param, query_param
from kernelindex.web.export_files import ExportBusy, ExportFiles, ExportResponse

router = APIRouter(prefix=urls.API, route_class=ProblemRoute, tags=["v1"])

OBJECT = {"type": "object", "additionalProperties": True}
LIST_SCHEMA = {
    "type": "object",
    "required": ["items", "next_cursor", "limit", "total"],
    "properties": {
        "items": {"type": "array", "items": OBJECT},
        "next_cursor": {"type": ["string", "null"]},
        "limit": {"type": "integer"},
        "total": {"type": "integer"},
    },
}
Slug = Annotated[str, path_param(params.SLUG)]


def _ok(description: str, schema: dict[str, Any] | None = None, *errors: int) -> dict[int | str, Any]:
    return {200: {"description": description, "content": {"application/json": {"schema": schema or OBJECT}}},
            **problem_responses(400, *errors, "4XX")}


def _resolution(description: str, *errors: int) -> dict[int | str, Any]:
    return {200: {"description": description, "model": ResolutionOut}, **problem_responses(400, *errors, "4XX")}


def _catalog(request: Request) -> Any:
    return request.app.state.catalog


def _json(data: Any) -> JSONResponse:
    return JSONResponse(data)


for _view in VIEWS:
    mount_twin(router, _view)


# ---- indexes beside the views ------------------------------------------------------------


@router.get(urls.OPERATIONS, summary="List operations", responses=_ok("Operations, by slug", LIST_SCHEMA))
def list_operations(request: Request, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> JSONResponse:
    items = reads.operations(_catalog(request))
    return _json(paginate("operations", items, lambda o: [o["slug"]], limit, cursor))


@router.get(urls.OPERATION_WORKLOADS, summary="Workload cases of one operation",
            responses=_ok("Workloads with eligible runs", LIST_SCHEMA, 404))
def list_operation_workloads(request: Request, slug: Slug, limit: Limit = DEFAULT_LIMIT,
                             cursor: Cursor = None) -> JSONResponse:
    items = answered(reads.workloads(_catalog(request), slug))
    return _json(paginate(f"workloads:{slug}", items, lambda w: [w["key"]], limit, cursor))


@router.get(urls.WORKLOADS, summary="Workload cases, optionally of one operation",
            responses=_ok("Workloads with eligible runs", LIST_SCHEMA, 404))
def list_workloads(
    request: Request,
    operation: Annotated[str | None, query_param(params.OPERATION)] = None,
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
) -> JSONResponse:
    items = answered(reads.workloads(_catalog(request), operation))
    return _json(paginate(f"workloads:{operation or '*'}", items, lambda w: [w["operation"], w["key"]], limit,
                          cursor))


@router.get(urls.IMPLEMENTATIONS, summary="Implementation lines", responses=_ok("Implementations", LIST_SCHEMA))
def list_implementations(request: Request, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> JSONResponse:
    items = reads.implementations(_catalog(request))
    return _json(paginate("implementations", items, lambda i: [i["slug"]], limit, cursor))


@router.get(urls.GPUS, summary="GPUs in the datasheet table", responses=_ok("GPUs", LIST_SCHEMA))
def list_gpus(request: Request, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> JSONResponse:
    items = reads.gpus(_catalog(request))
    return _json(paginate("gpus", items, lambda g: [g["url"]], limit, cursor))


@router.post(urls.RESOLVE, summary="Resolve a structured request",
             description="The same resolver as the text query: the structured form of a query returns the same "
                         "answer. Unknown fields are rejected; a value that names nothing is a 422 with a "
                         "suggestion.",
             responses=_resolution("The resolution (query is null: there was no text to parse)", 413, 415, 422))
def post_resolve(request: Request, body: Annotated[ResolveRequest, Body()]) -> JSONResponse:
    return _json(answered(reads.resolution(_catalog(request), request.app.state.clock(), body)))


# ---- export ---------------------------------------------------------------------------------


@router.get(urls.EXPORT, summary="The whole catalog as JSON Lines", response_class=StreamingResponse,
            description="One manifest per line: sources (license, attribution) first, then objects, runs and "
                        "lifecycle facts, from one snapshot of the catalog (its version in "
                        "`X-KernelIndex-Catalog-Version`, its size in `Content-Length`). Re-importable with "
                        "`ki import jsonl`. At most 8 downloads at once per server process (503 `export_busy` "
                        "with Retry-After past it); a client that stops reading for 30 s is cut.",
            responses={200: {"description": "JSON Lines", "content": {"application/jsonl": {"schema": {
                "type": "string"}}}}, **problem_responses(400, 503, "4XX")})
async def get_export(request: Request) -> Any:
    files = _export_files(request)
    try:
        files.take_slot()
    except ExportBusy as busy:
        return problem_response(busy.problem(), request.url.path)
    try:
        version, path = await files.file_for(_catalog(request))
    except BaseException:
        files.give_slot()
        raise
    return ExportResponse(version, path, files)


def _export_files(request: Request) -> ExportFiles:
    state = request.app.state
    if getattr(state, "export_files", None) is None:
        state.export_files = ExportFiles()
    files: ExportFiles = state.export_files
    return files


# ---- methods a path does not take -----------------------------------------------------------


def _fallback(request: Request) -> JSONResponse:
    """Reached only when no declared route took the request (any method): a 405 with ``Allow``, or a 404."""
    allowed: set[str] = {"GET"} if request.url.path == urls.OPENAPI else set()
    from kernelindex.web.api.write_routes import router as write_router

    for route in [*router.routes, *write_router.routes]:
        if isinstance(route, APIRoute) and route.path_regex.match(request.url.path):
            allowed |= set(route.methods or ())
    if not allowed:
        return problem_response(Problem("not_found", f"Nothing lives at {request.url.path}; the API is described "
                                        f"at {urls.OPENAPI}."), request.url.path)
    if "GET" in allowed:
        allowed.add("HEAD")
    response = problem_response(Problem("method_not_allowed", f"{request.method} is not allowed here; use "
                                        f"{', '.join(sorted(allowed))}."), request.url.path)
    response.headers["allow"] = ", ".join(sorted(allowed))
    return response


class _Fallback:
    """An ASGI endpoint (not a function), so Starlette matches it for every HTTP method."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await _fallback(Request(scope, receive))(scope, receive, send)


for _kept in (list_operations, list_workloads, list_implementations, list_gpus):
    keeps_answers(_kept)
keeps_answers(list_operation_workloads, scope="operation")
register_agent_routes(router)  # before the fallback, which takes every path left over
router.routes.append(Route(urls.API_FALLBACK, _Fallback(), include_in_schema=False))
