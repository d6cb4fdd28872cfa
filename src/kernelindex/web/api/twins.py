"""A view's JSON twin under ``/api/v1`` and its CSV (``?format=csv``), mounted from the view's
declaration in the page table: the parameters (pattern, length, description) the schema states, the
words of its documentation, its 200 schema (the read model its builder returns, with its extras), the
cursor pages of its main list and the rows of its CSV. Each twin serves ``view.data()``: the very data
its HTML page renders."""

from __future__ import annotations

import inspect
from dataclasses import field, make_dataclass
from typing import Annotated, Any, Literal, get_type_hints

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse, Response

from kernelindex.services import reads
from kernelindex.services.problems import Problem
from kernelindex.views import params
from kernelindex.views.params import Param, Repeated
from kernelindex.views.table import View
from kernelindex.web.answer_scope import keeps_answers
from kernelindex.web.api.csv_views import CSV_CONTENT, csv_response
from kernelindex.web.api.integers import STRICT_INTEGER
from kernelindex.web.api.pagination import DEFAULT_LIMIT, MAX_LIMIT, paginate
from kernelindex.web.api.problems import answered, problem_responses
from kernelindex.web.api.schemas import ResolutionOut
from kernelindex.web.pages import moved_cohort

_LIMIT_TEXT = (f"Page size, 1–{MAX_LIMIT}. There is no 'all' (0 is refused): follow next_cursor to the end, "
               "as `ki records --limit 0` does.")
Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description=_LIMIT_TEXT), STRICT_INTEGER]
Cursor = Annotated[str | None, Query(max_length=512, pattern=params.CURSOR_PATTERN,
                                     description="Opaque cursor from the previous page's next_cursor.")]
_FORMAT_TEXT = ("json (default), or csv: the table as a CSV download (header row, one row per row of the page, "
                "units in the names).")
Format = Annotated[Literal["json", "csv"], Query(description=_FORMAT_TEXT)]


def path_param(param: Param) -> Any:
    """A path subject as the page table declares it. The schema states its pattern; the server decides with
    ``check_subject`` (a value that cannot name anything is a 404, like any path that names nothing)."""
    return Path(description=param.description,
                json_schema_extra={"pattern": param.pattern, "maxLength": param.max_length})


def query_param(param: Param) -> Any:
    """A query parameter as the page table declares it (pattern, length, description)."""
    enum = {"enum": list(param.choices)} if param.choices else None
    return Query(pattern=param.pattern, max_length=param.max_length, description=param.description,
                 json_schema_extra=enum)


def _repeated(repeated: Repeated) -> Any:
    """A repeated query parameter (compare's ``run``): its count, each value, and no value twice."""
    item = {"type": "string", "pattern": repeated.param.pattern, "maxLength": repeated.param.max_length}
    return Query(min_length=repeated.least, max_length=repeated.most, description=repeated.param.description,
                 json_schema_extra={"items": item, "uniqueItems": True})


def _schema(view: View) -> type:
    """The 200 answer's schema: the read model the builder returns, with the view's extras (the resolver's
    answer is described by its API schema)."""
    model = ResolutionOut if view.name == "search" else get_type_hints(view.build)["return"]
    if not view.extras:
        return model
    extras = [(e.name, e.schema | None, field(default=None, kw_only=True)) for e in view.extras]
    return make_dataclass(model.__name__, extras, bases=(model,))


def _responses(view: View, doc: Any) -> dict[int | str, Any]:
    ok: dict[str, Any] = {"description": doc.answers, "model": _schema(view)}
    if view.csv is not None:  # declare the ``?format=csv`` rendering of a 200 next to its JSON
        ok["content"] = {"application/json": {"schema": {"$ref": f"#/components/schemas/{ok['model'].__name__}"}},
                         **CSV_CONTENT}
    return {200: ok, **problem_responses(400, *doc.errors, "4XX")}


def _signature(view: View) -> inspect.Signature:
    """The twin's parameters as FastAPI reads them: the view's subject, query, repeated parameter, and
    ``limit``/``cursor`` when its main list is paginated, ``format`` when it has a CSV."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    found = [inspect.Parameter("request", keyword, annotation=Request)]
    if view.subject is not None:
        found.append(inspect.Parameter(view.subject.name, keyword,
                                       annotation=Annotated[str, path_param(view.subject)]))
    found += [inspect.Parameter(p.name, keyword, annotation=Annotated[str | None, query_param(p)], default=None)
              for p in view.query]
    found += [inspect.Parameter(r.param.name, keyword, annotation=Annotated[list[str], _repeated(r)], default=[])
              for r in view.repeated]
    if view.pages is not None:
        found += [inspect.Parameter("limit", keyword, annotation=Limit, default=DEFAULT_LIMIT),
                  inspect.Parameter("cursor", keyword, annotation=Cursor, default=None)]
    if view.csv is not None:
        found.append(inspect.Parameter("format", keyword, annotation=Format, default="json"))
    return inspect.Signature(found, return_annotation=Response)


def _paginated(view: View, args: dict[str, Any], data: dict[str, Any], limit: int, cursor: str | None) -> Any:
    """The view's main list one cursor page at a time, with ``pagination`` saying where it is."""
    assert view.pages is not None
    page, main = dict(data), view.pages(data)
    listing = f"{view.name}:" + ":".join(str(args.get(p.name)) for p in view.query)
    chunk = paginate(listing, list(enumerate(page[main])), lambda p: [p[0]], limit, cursor)
    page[main] = [item for _, item in chunk["items"]]
    page["pagination"] = {"list": main, "next_cursor": chunk["next_cursor"], "limit": limit, "total": chunk["total"]}
    return page


def mount_twin(router: APIRouter, view: View) -> None:
    """Mount ``view``'s JSON twin (and CSV) on the API ``router``."""
    doc = view.api
    assert doc is not None, f"the {view.name} view declares no API documentation"

    def endpoint(request: Request, **given: Any) -> Response:
        limit, cursor, format = given.pop("limit", None), given.pop("cursor", None), given.pop("format", "json")
        subject = given.pop(view.subject.name) if view.subject is not None else None
        catalog, now = request.app.state.catalog, request.app.state.clock()
        outcome = reads.page(catalog, now, view.name, subject, **given)
        if isinstance(outcome, Problem) and outcome.code == "cohort_moved":
            return moved_cohort(request, outcome.errors[0]["suggestion"])
        data = answered(outcome)
        if format == "csv" and view.csv is not None:
            name = view.csv.filename.format(slug=view.canonical_subject(subject or ""))
            return csv_response(catalog, view.csv.columns, view.csv.rows(data), name)
        if view.pages is not None:
            data = _paginated(view, given, data, limit, cursor)
        response = JSONResponse(data)
        if view.subject is not None and (canonical := view.canonical_subject(subject or "")) != subject:
            # another name of the subject (a GPU's name) answers as its canonical resource
            response.headers["content-location"] = view.api_path.format(**{view.subject.name: canonical})
        return response

    endpoint.__name__ = endpoint.__qualname__ = f"get_{view.name}"
    endpoint.__signature__ = _signature(view)  # type: ignore[attr-defined]
    keeps_answers(endpoint, scope=view.cache)
    router.add_api_route(view.twin or view.path, endpoint, methods=["GET"], summary=doc.summary,
                         description=doc.description, responses=_responses(view, doc))
