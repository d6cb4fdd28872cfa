"""REST API v1. Every endpoint serves the ``to_json()`` of the read model its page renders (or the
resolver's answer), so the API, the pages and the CLI cannot disagree."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from typing import Annotated, Any, Literal, get_type_hints

from fastapi import APIRouter, Body, Path, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from fastapi.routing import APIRoute
from starlette.routing import Route

from kernelindex.readmodel.cache import READ_CACHE
from kernelindex.readmodel.objects import export_lines
from kernelindex.readmodel.operations import operations_index
from kernelindex.resolve.listings import implementations_list, workloads_list
from kernelindex.resolve.request import ResolveRequest
from kernelindex.resolve.source import CatalogCohortSource
from kernelindex.services import reads
from kernelindex.services.problems import Problem
from kernelindex.views import params
from kernelindex.views.params import Param, Repeated
from kernelindex.views.table import COMPARE_RUNS, QUERY, VIEW
from kernelindex.web.answer_cache import keeps_answers
from kernelindex.web.api.agent_routes import register as register_agent_routes
from kernelindex.web.api.csv_views import (
    CSV_CONTENT,
    OPERATION_COLUMNS,
    RECORD_COLUMNS,
    RESOLUTION_COLUMNS,
    csv_response,
    operation_rows,
    records_rows,
    resolution_rows,
)
from kernelindex.web.api.pagination import DEFAULT_LIMIT, MAX_LIMIT, paginate
from kernelindex.web.api.problems import ApiProblem, ProblemRoute, answered, problem_response, problem_responses
from kernelindex.web.api.schemas import ResolutionOut

router = APIRouter(prefix="/api/v1", route_class=ProblemRoute, tags=["v1"])

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

_LIMIT_TEXT = (f"Page size, 1–{MAX_LIMIT}. There is no 'all' (0 is refused): follow next_cursor to the end, "
               "as `ki records --limit 0` does.")
Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description=_LIMIT_TEXT), params.STRICT_INTEGER]
Cursor = Annotated[str | None, Query(max_length=512, pattern=params.CURSOR_PATTERN,
                                     description="Opaque cursor from the previous page's next_cursor.")]


def _path(param: Param) -> Any:
    """A path subject as the page table declares it. The schema states its pattern; the server decides with
    ``check_subject`` (a value that cannot name anything is a 404, like any path that names nothing)."""
    return Path(description=param.description,
                json_schema_extra={"pattern": param.pattern, "maxLength": param.max_length})


def _item(param: Param) -> dict[str, Any]:
    """The schema of each value of a repeated query parameter (compare's ``run``)."""
    return {"type": "string", "pattern": param.pattern, "maxLength": param.max_length}


def _repeated(repeated: Repeated) -> Any:
    """A repeated query parameter (compare's ``run``): its count, each value, and no value twice."""
    return Query(min_length=repeated.least, max_length=repeated.most, description=repeated.param.description,
                 json_schema_extra={"items": _item(repeated.param), "uniqueItems": True})


Slug = Annotated[str, _path(params.SLUG)]
RunId = Annotated[str, _path(params.RUN_ID)]



def _query(param: Param) -> Any:
    """A query parameter as the page table declares it (pattern, length, description)."""
    enum = {"enum": list(param.choices)} if param.choices else None
    return Query(pattern=param.pattern, max_length=param.max_length, description=param.description,
                 json_schema_extra=enum)


def _ok(description: str, schema: dict[str, Any] | None = None, *errors: int) -> dict[int | str, Any]:
    return {200: {"description": description, "content": {"application/json": {"schema": schema or OBJECT}}},
            **problem_responses(400, *errors, "4XX")}


def _page(description: str, name: str, *errors: int) -> dict[int | str, Any]:
    """A JSON twin's responses: its 200 schema is the read-model class the page's builder returns."""
    model = get_type_hints(VIEW[name].build)["return"]
    return {200: {"description": description, "model": model}, **problem_responses(400, *errors, "4XX")}


def _resolution(description: str, *errors: int) -> dict[int | str, Any]:
    return {200: {"description": description, "model": ResolutionOut}, **problem_responses(400, *errors, "4XX")}


def _with_csv(responses: dict[int | str, Any]) -> dict[int | str, Any]:
    """Declare the ``?format=csv`` rendering of a 200 next to its JSON."""
    ok = dict(responses[200])
    if "model" in ok:
        ok["content"] = {"application/json": {"schema": {"$ref": f"#/components/schemas/{ok['model'].__name__}"}}}
    ok["content"] = {**ok.get("content", {}), **CSV_CONTENT}
    return {**responses, 200: ok}


Format = Annotated[Literal["json", "csv"], Query(description="json (default), or csv: the table as a CSV download "
                                                             "(header row, one row per run, units in the names).")]


def _catalog(request: Request) -> Any:
    return request.app.state.catalog


def _cached(request: Request, key: Hashable, compute: Callable[[], Any]) -> Any:
    """Read models are pure functions of the catalog: cache their JSON per catalog version."""
    return READ_CACHE.get(_catalog(request), ("api",) + (key if isinstance(key, tuple) else (key,)), compute)


def _view_json(request: Request, name: str, subject: str | None = None, **query: Any) -> dict[str, Any]:
    """A page's JSON twin over the app's catalog and clock (the page service), or its problem."""
    return answered(reads.page(_catalog(request), request.app.state.clock(), name, subject, **query))


def _view(request: Request, name: str, subject: str | None = None, **query: Any) -> JSONResponse:
    return _json(_view_json(request, name, subject, **query))


def _json(data: Any) -> JSONResponse:
    return JSONResponse(data)


# ---- the home page and operations ------------------------------------------------------------


@router.get("/home", summary="The home page's model",
            responses=_page("Headline records, sources and their freshness", "home"))
def get_home(request: Request) -> JSONResponse:
    return _view(request, "home")


@router.get("/operations", summary="List operations", responses=_ok("Operations, by slug", LIST_SCHEMA))
def list_operations(request: Request, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> JSONResponse:
    items = _cached(request, "operations", lambda: [o.to_json() for o in operations_index(_catalog(request))])
    return _json(paginate("operations", items, lambda o: [o["slug"]], limit, cursor))


@router.get("/operations/{slug}", summary="Operation detail (the operation page's model)",
            responses=_with_csv(_page("The operation page: workloads, cohorts, headline slots, ranked rows, floor",
                                      "operation", 404)))
def get_operation(
    request: Request,
    slug: Slug,
    workload: Annotated[str | None, _query(params.WORKLOAD)] = None,
    cohort: Annotated[str | None, _query(params.COHORT)] = None,
    gpu: Annotated[str | None, _query(params.GPU)] = None,
    format: Format = "json",
) -> Response:
    data = _view_json(request, "operation", slug, workload=workload, cohort=cohort, gpu=gpu)
    if format == "csv":
        return csv_response(_catalog(request), OPERATION_COLUMNS, operation_rows(data), f"{slug}-ranked.csv")
    return _json(data)


@router.get("/operations/{slug}/workloads", summary="Workload cases of one operation",
            responses=_ok("Workloads with eligible runs", LIST_SCHEMA, 404))
def list_operation_workloads(request: Request, slug: Slug, limit: Limit = DEFAULT_LIMIT,
                             cursor: Cursor = None) -> JSONResponse:
    items = _workloads(request, slug)
    return _json(paginate(f"workloads:{slug}", items, lambda w: [w["key"]], limit, cursor))


@router.get("/workloads", summary="Workload cases, optionally of one operation",
            responses=_ok("Workloads with eligible runs", LIST_SCHEMA, 404))
def list_workloads(
    request: Request,
    operation: Annotated[str | None, _query(params.OPERATION)] = None,
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
) -> JSONResponse:
    items = _workloads(request, operation)
    return _json(paginate(f"workloads:{operation or '*'}", items, lambda w: [w["operation"], w["key"]], limit,
                          cursor))


def _workloads(request: Request, operation: str | None) -> list[dict[str, Any]]:
    source = CatalogCohortSource(_catalog(request))
    if operation is not None and operation not in source.operations():
        raise ApiProblem("not_found", f"no operation {operation!r} in the catalog; list them at /api/v1/operations")
    return _cached(request, ("workloads", operation), lambda: workloads_list(source, operation))


# ---- implementations, runs, records, GPUs, challenges, compare --------------------------------


@router.get("/implementations", summary="Implementation lines", responses=_ok("Implementations", LIST_SCHEMA))
def list_implementations(request: Request, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> JSONResponse:
    items = _cached(request, "implementations", lambda: implementations_list(CatalogCohortSource(_catalog(request))))
    return _json(paginate("implementations", items, lambda i: [i["slug"]], limit, cursor))


@router.get("/implementations/{slug}", summary="One implementation line (the implementation page's model)",
            responses=_page("Revisions, install, license, runs per workload and GPU", "implementation", 404))
def get_implementation(request: Request, slug: Slug) -> JSONResponse:
    return _view(request, "implementation", slug)


@router.get("/runs/{run_id}", summary="Evidence dossier of one run",
            responses=_page("Status, timing, rank or the reason it is not ranked, workload, protocol, environment",
                            "run", 404))
def get_run(request: Request, run_id: RunId) -> JSONResponse:
    return _view(request, "run", run_id)


@router.get("/records", summary="The records ledger",
            description="The records page's model. Its main list (`cohorts`, or `events` for view=history) is "
                        "paginated: `pagination` gives the list's name, `next_cursor`, `limit` and `total`.",
            responses=_with_csv(_page("Cohorts with their holder and history (plus `pagination`)", "records", 404)))
def get_records(
    request: Request,
    operation: Annotated[str | None, _query(params.OPERATION)] = None,
    gpu: Annotated[str | None, _query(params.GPU)] = None,
    evidence: Annotated[str | None, _query(params.EVIDENCE)] = None,
    view: Annotated[str | None, _query(params.VIEW)] = None,
    cohort: Annotated[str | None, _query(params.COHORT)] = None,
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
    format: Format = "json",
) -> Response:
    key = ("records", operation, gpu, evidence, view, cohort)
    page = dict(_view_json(request, "records", operation=operation, gpu=gpu, evidence=evidence, view=view,
                           cohort=cohort))
    if format == "csv":  # the whole ledger for these filters: a download is not paginated
        return csv_response(_catalog(request), RECORD_COLUMNS, records_rows(page), "kernelindex-records.csv")
    main = "events" if page.get("view") == "history" else "cohorts"
    listing = "records:" + ":".join(str(v) for v in key[1:])
    positions = list(enumerate(page[main]))
    chunk = paginate(listing, positions, lambda p: [p[0]], limit, cursor)
    page[main] = [item for _, item in chunk["items"]]
    page["pagination"] = {"list": main, "next_cursor": chunk["next_cursor"], "limit": limit, "total": chunk["total"]}
    return _json(page)


@router.get("/gpus", summary="GPUs in the datasheet table", responses=_ok("GPUs", LIST_SCHEMA))
def list_gpus(request: Request, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> JSONResponse:
    items = reads.gpus(_catalog(request))
    return _json(paginate("gpus", items, lambda g: [g["url"]], limit, cursor))


@router.get("/gpus/{slug}", summary="One GPU: peaks, measured ceilings, coverage, records",
            description="The GPU page's model. Its cohorts (`records`) come a numbered page at a time, as on the "
                        "page: `records_paging` gives `page`, `pages`, `total`, `previous` and `next`.",
            responses=_page("The GPU page's model", "gpu", 404))
def get_gpu(request: Request, slug: Annotated[str, _path(params.GPU_SUBJECT)],
            page: Annotated[str | None, _query(params.PAGE)] = None) -> JSONResponse:
    response = _view(request, "gpu", slug, page=page)
    if (canonical := VIEW["gpu"].canonical_subject(slug)) != slug:  # a GPU name answers as its slug's resource
        response.headers["content-location"] = f"/api/v1/gpus/{canonical}"
    return response


@router.get("/challenges", summary="Open challenges",
            description="The challenges page's model. Its four lists (`unmeasured`, `unbeaten_baselines`, "
                        "`single_entry`, `stale_records`) are one ordered list that comes a numbered page at a time, "
                        "as on the page: `paging` gives `page`, `pages`, `total`, `previous` and `next`; `sections` "
                        "says where each list lies and which of its rows this page holds; `counts` are the whole "
                        "catalog's.",
            responses=_page("Unmeasured cells, unbeaten baselines, single-entry cohorts, stale records", "challenges"))
def get_challenges(request: Request, page: Annotated[str | None, _query(params.PAGE)] = None) -> JSONResponse:
    return _view(request, "challenges", page=page)


@router.get("/compare", summary="Compare 2–8 runs", responses=_page("Runs side by side; a winner only within one "
                                                                    "cohort, else the first material difference",
                                                                    "compare", 404))
def get_compare(
    request: Request,
    run: Annotated[list[str], _repeated(COMPARE_RUNS)],
) -> JSONResponse:
    return _view(request, "compare", run=run)


# ---- search and resolve ---------------------------------------------------------------------


@router.get("/search", summary="Search with the query grammar",
            description="Free words plus key:value filters and axis bindings, e.g. "
                        "`rope seq=2048 hidden=8192 gpu:a100`. Problems in the text come back beside their token "
                        "in `query.issues`; the rest still resolves.",
            responses=_with_csv(_resolution("The resolution: exact cohorts, other protocols, compatible, nearest, "
                                            "gaps")))
def get_search(
    request: Request,
    q: Annotated[str, _query(QUERY)] = "",
    format: Format = "json",
) -> Response:
    data = _view_json(request, "search", q=q)
    if format == "csv":
        return csv_response(_catalog(request), RESOLUTION_COLUMNS, resolution_rows(data), "kernelindex-search.csv")
    return _json(data)


@router.post("/resolve", summary="Resolve a structured request",
             description="The same resolver as the text query: the structured form of a query returns the same "
                         "answer. Unknown fields are rejected; a value that names nothing is a 422 with a "
                         "suggestion.",
             responses=_resolution("The resolution (query is null: there was no text to parse)", 413, 415, 422))
def post_resolve(request: Request, body: Annotated[ResolveRequest, Body()]) -> JSONResponse:
    return _json(answered(reads.resolution(_catalog(request), request.app.state.clock(), body)))


# ---- export ---------------------------------------------------------------------------------


@router.get("/export", summary="The whole catalog as JSON Lines", response_class=StreamingResponse,
            description="One manifest per line: sources (license, attribution) first, then objects, runs and "
                        "lifecycle facts. Re-importable with `ki import jsonl`.",
            responses={200: {"description": "JSON Lines", "content": {"application/jsonl": {"schema": {
                "type": "string"}}}}, **problem_responses(400, "4XX")})
def get_export(request: Request) -> StreamingResponse:
    def lines() -> Iterator[bytes]:
        for line in export_lines(_catalog(request)):
            yield (line if line.endswith("\n") else line + "\n").encode()

    return StreamingResponse(lines(), media_type="application/jsonl",
                             headers={"content-disposition": 'attachment; filename="kernelindex-export.jsonl"'})


# ---- methods a path does not take -----------------------------------------------------------


def _fallback(request: Request) -> JSONResponse:
    """Reached only when no declared route took the request (any method): a 405 with ``Allow``, or a 404."""
    allowed: set[str] = {"GET"} if request.url.path == "/api/v1/openapi.json" else set()
    from kernelindex.web.api.write_routes import router as write_router

    for route in [*router.routes, *write_router.routes]:
        if isinstance(route, APIRoute) and route.path_regex.match(request.url.path):
            allowed |= set(route.methods or ())
    if not allowed:
        return problem_response(Problem("not_found", f"Nothing lives at {request.url.path}; the API is described "
                                        "at /api/v1/openapi.json."), request.url.path)
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


for _kept in (get_home, list_operations, get_operation, list_operation_workloads, list_workloads, list_implementations,
              get_implementation, get_run, get_records, list_gpus, get_gpu, get_compare, get_search):
    keeps_answers(_kept)
register_agent_routes(router)  # before the fallback, which takes every path left over
router.routes.append(Route("/api/v1/{path:path}", _Fallback(), include_in_schema=False))
