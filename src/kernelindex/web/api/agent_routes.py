"""API routes built for coding agents: many resolve questions in one call, and what to run.

Every answer is the resolver's (text → ``GET /search``'s body, structured → ``POST /resolve``'s);
a query that cannot be answered carries the same problem body the single-query routes return.
"""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Body, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from kernelindex import urls
from kernelindex.resolve.grammar import MAX_QUERY_CHARS
from kernelindex.services import reads
from kernelindex.services.reads import MAX_BATCH
from kernelindex.web.api.problems import BodyRule, accepts_body, answered, problem_responses
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


# A schema-valid query serialises to at most ~15 KB (a structured request's ~600 characters of text and 16
# axes, each character at most a 12-byte surrogate-pair escape), so a full batch fits in 50 × 16 KiB.
QUERY_BODY_BYTES = 16 * 1024


@accepts_body(BodyRule(MAX_BATCH * QUERY_BODY_BYTES))
def post_resolve_batch(request: Request, body: Annotated[BatchRequest, Body()]) -> Response:
    answers = answered(reads.batch(request.app.state.catalog, request.app.state.clock(), list(body.queries)))
    return Response(orjson.dumps(answers), media_type="application/json")  # ~1 MB for 50 answers: orjson is 5× faster


def get_use(request: Request, q: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS,
                                                      description="e.g. rope seq=2048 hidden=8192 bf16 h200")]
            ) -> JSONResponse:
    return JSONResponse(answered(reads.use(request.app.state.catalog, request.app.state.clock(), q)))


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
    router.post(urls.RESOLVE_BATCH, summary="Resolve up to 50 queries in one call", description=BATCH_DESCRIPTION,
                responses={200: {"description": "One answer per query, in order", "model": BatchOut},
                           **problem_responses(400, 413, 415, 422, "4XX")})(post_resolve_batch)
    use_ok = {"description": "The recommendation (status measured, not_measured_on_gpu, not_measured, "
                             "choose_workload or no_exact_workload)",
              "content": {"application/json": {"schema": USE_SCHEMA}}}
    router.get(urls.USE, summary="What to run for an exact workload on a GPU", description=USE_DESCRIPTION,
               responses={200: use_ok, **problem_responses(400, "4XX")})(get_use)
