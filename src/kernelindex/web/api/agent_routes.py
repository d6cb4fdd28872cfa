"""API routes built for coding agents: many resolve questions in one call, and what to run.

Every answer is the resolver's (text → ``GET /search``'s body, structured → ``POST /resolve``'s);
a query that cannot be answered carries the same problem body the single-query routes return.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Body, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from kernelindex.readmodel.cache import READ_CACHE, VersionedCache
from kernelindex.resolve.batch import MAX_BATCH, QueryFailure, answer_query
from kernelindex.resolve.grammar import MAX_QUERY_CHARS
from kernelindex.resolve.source import CatalogCohortSource
from kernelindex.resolve.use import use_text
from kernelindex.web.api.problems import ApiProblem, BodyRule, accepts_body, problem_body, problem_responses
from kernelindex.web.api.schemas import ResolutionOut

USE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["query", "canonical_query", "status", "message", "recommendation", "choices"],
    "properties": {
        "query": {"type": ["object", "null"]},
        "canonical_query": {"type": "string"},
        "status": {"type": "string", "enum": ["measured", "not_measured_on_gpu", "not_measured", "choose_workload",
                                              "no_exact_workload"]},
        "message": {"type": "string"},
        "recommendation": {"type": ["object", "null"]},
        "choices": {"type": "array", "items": {"type": "object"}},
    },
}


class BatchRequest(BaseModel):
    """Up to 50 queries; each is a text query (string) or a structured request (object)."""

    model_config = ConfigDict(extra="forbid")
    queries: list[str | dict[str, Any]] = Field(
        min_length=1, max_length=MAX_BATCH,
        description=f"1–{MAX_BATCH} queries, each a text query such as \"rope seq=2048 hidden=8192 a100\" or a "
                    "structured request with the fields of POST /api/v1/resolve.")


class BatchAnswerOut(BaseModel):
    model_config = ConfigDict(extra="forbid")
    index: int
    status: int = Field(description="200 when the query resolved, else the status its single-query route gives.")
    kind: str = Field(description="text or structured")
    result: ResolutionOut | None
    problem: dict[str, Any] | None = Field(description="problem+json body when the query could not be answered")


class BatchOut(BaseModel):
    model_config = ConfigDict(extra="forbid")
    count: int
    answered: int
    failed: int
    answers: list[BatchAnswerOut]


def _cache_key(query: object, now: datetime) -> tuple[str, ...]:
    """Text answers are keyed on the text; structured ones on their canonical JSON; both on the day
    (staleness moves by days)."""
    day = now.date().isoformat()
    if isinstance(query, str):
        return ("api", "search", day, query)
    return ("api", "resolve", day, json.dumps(query, sort_keys=True))


def batch_answers(catalog: Any, cache: VersionedCache | None, queries: list[Any], now: datetime) -> dict[str, Any]:
    """The batch body (also the MCP tool ``resolve_kernels``): each answer cached per catalog version and
    day; ``now`` is the app's clock."""
    source = CatalogCohortSource(catalog)
    version = source.version()
    answers = []
    for index, query in enumerate(queries):
        kind = "text" if isinstance(query, str) else "structured"

        def compute(query: object = query) -> dict[str, Any] | QueryFailure:
            outcome = answer_query(catalog, query, now=now, source=source)
            return outcome if isinstance(outcome, QueryFailure) else outcome.to_json()

        outcome = compute() if cache is None else cache.get(catalog, _cache_key(query, now), compute, version=version)
        if isinstance(outcome, QueryFailure):
            problem = ApiProblem(outcome.code, outcome.detail,
                                 [{**e, "field": f"queries[{index}].{e['field']}"} for e in outcome.errors])
            answers.append({"index": index, "status": problem.status, "kind": kind, "result": None,
                            "problem": problem_body(problem, f"/api/v1/resolve/batch#queries[{index}]")})
        else:
            answers.append({"index": index, "status": 200, "kind": kind, "result": outcome, "problem": None})
    failed = sum(1 for a in answers if a["problem"])
    return {"count": len(answers), "answered": len(answers) - failed, "failed": failed, "answers": answers}


# A schema-valid query serialises to at most ~15 KB (a structured request's ~600 characters of text and 16
# axes, each character at most a 12-byte surrogate-pair escape), so a full batch fits in 50 × 16 KiB.
QUERY_BODY_BYTES = 16 * 1024


@accepts_body(BodyRule(MAX_BATCH * QUERY_BODY_BYTES))
def post_resolve_batch(request: Request, body: Annotated[BatchRequest, Body()]) -> Response:
    answers = batch_answers(request.app.state.catalog, READ_CACHE, list(body.queries), request.app.state.clock())
    return Response(orjson.dumps(answers), media_type="application/json")  # ~1 MB for 50 answers: orjson is 5× faster


def use_body(catalog: Any, q: str, now: datetime) -> dict[str, Any]:
    """``GET /api/v1/use``'s body (also the MCP tool ``recommend_kernel``), or the problem it raises."""
    outcome = READ_CACHE.get(catalog, ("api", "use", now.date().isoformat(), q), lambda: use_text(catalog, q, now=now))
    if isinstance(outcome, QueryFailure):
        raise ApiProblem("bad_request", outcome.detail, [{**e, "in": "query"} for e in outcome.errors])
    return outcome


def get_use(request: Request, q: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS,
                                                      description="e.g. rope seq=2048 hidden=8192 bf16 h200")]
            ) -> JSONResponse:
    return JSONResponse(use_body(request.app.state.catalog, q, request.app.state.clock()))


BATCH_DESCRIPTION = (
    "Each query is a text query (a string, answered as GET /api/v1/search answers it) or a structured request "
    "(an object, answered as POST /api/v1/resolve answers it). Answers come back in order, each with its own "
    "status; a query that cannot be answered carries its problem and does not fail the others.")
USE_DESCRIPTION = (
    "The fastest usable implementation for one workload on one GPU: in the GPU's verified cohort when there is "
    "one, else in its default cohort (both when both exist, each labelled with its cohort; never compared across "
    "cohorts). Each answer gives the pinned install line, a runnable Python snippet with tensors of the workload's "
    "shapes and dtypes, the evidence line and the floor ratio. Not measured on that GPU: the nearest measured GPU's "
    "answers and the asked GPU's floor estimate. `ki use` prints the same answer.")


def register(router: APIRouter) -> None:
    """Add these routes to the API v1 router (before its fallback route, which takes every other path)."""
    router.post("/resolve/batch", summary="Resolve up to 50 queries in one call", description=BATCH_DESCRIPTION,
                responses={200: {"description": "One answer per query, in order", "model": BatchOut},
                           **problem_responses(400, 413, 415, 422, "4XX")})(post_resolve_batch)
    use_ok = {"description": "The recommendation (status measured, not_measured_on_gpu, not_measured, "
                             "choose_workload or no_exact_workload)",
              "content": {"application/json": {"schema": USE_SCHEMA}}}
    router.get("/use", summary="What to run for an exact workload on a GPU", description=USE_DESCRIPTION,
               responses={200: use_ok, **problem_responses(400, "4XX")})(get_use)
