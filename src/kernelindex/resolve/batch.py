"""Many questions in one call: each query (text or structured) is answered on its own, in order.

One bad query becomes a failure in its own slot; the others still resolve. A text query answers
exactly as ``GET /api/v1/search`` does and a structured one exactly as ``POST /api/v1/resolve``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from kernelindex.catalog.db import Catalog
from kernelindex.resolve.grammar import MAX_QUERY_CHARS
from kernelindex.resolve.request import ResolveRequest
from kernelindex.resolve.results import Resolution
from kernelindex.resolve.service import RequestProblems, resolve_structured, search
from kernelindex.resolve.source import CatalogCohortSource

MAX_BATCH = 50


@dataclass(frozen=True)
class QueryFailure:
    """Why one query got no answer, in the API's problem vocabulary (``code`` is a problem code)."""

    code: str
    detail: str
    errors: list[dict[str, Any]] = field(default_factory=list)


def validation_errors(exc: ValidationError, prefix: str = "") -> list[dict[str, Any]]:
    """Pydantic's errors as ``{field, message}`` pairs, fields dotted (``axes.seq``)."""
    out = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ()))
        out.append({"field": prefix + where if where else prefix.rstrip(".") or "request", "message": err["msg"]})
    return out


def answer_query(catalog: Catalog, query: object, *, now: datetime,
                 source: CatalogCohortSource | None = None) -> Resolution | QueryFailure:
    """One query of a batch: a string is a text query, an object a structured request."""
    if isinstance(query, str):
        if len(query) > MAX_QUERY_CHARS:
            return QueryFailure("invalid_request", f"The query is {len(query)} characters long; queries are at most "
                                f"{MAX_QUERY_CHARS}.", [{"field": "query", "message": "too long"}])
        return search(catalog, query, now=now, source=source)
    if not isinstance(query, dict):
        return QueryFailure("invalid_request", "A query is either a text query (a string) or a structured request "
                            "(an object with operation, axes, dtype, gpu …).",
                            [{"field": "query", "message": f"got {type(query).__name__}"}])
    try:
        request = ResolveRequest.model_validate(query)
    except ValidationError as exc:
        errors = validation_errors(exc)
        return QueryFailure("invalid_request", "; ".join(f"{e['field']}: {e['message']}" for e in errors), errors)
    try:
        return resolve_structured(catalog, request, now=now, source=source)
    except RequestProblems as exc:
        return QueryFailure("invalid_request", str(exc), [p.to_json() for p in exc.problems])


def resolve_batch(catalog: Catalog, queries: Sequence[object], *, now: datetime
                  ) -> list[Resolution | QueryFailure]:
    """Answers in the order of the queries; the caller bounds the batch at :data:`MAX_BATCH`.
    One run source for the whole batch: every answer reads the same catalog version."""
    source = CatalogCohortSource(catalog)
    return [answer_query(catalog, q, now=now, source=source) for q in queries]
