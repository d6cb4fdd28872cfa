"""The two entry points every surface uses: a text query and a structured request, one resolver.

A text query never fails (problems in the text are reported beside their tokens); a structured
request that does not validate, or names what does not exist, is a :class:`Refusal`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from kernelindex.catalog.db import Catalog
from kernelindex.resolve.grammar import parse_query
from kernelindex.resolve.request import ResolveRequest, ValueProblem, normalise_request
from kernelindex.resolve.resolver import observed_axis, resolve
from kernelindex.resolve.results import Resolution
from kernelindex.resolve.source import CatalogCohortSource


@dataclass(frozen=True)
class Refusal:
    """Why a request has no answer: a sentence, and each field at fault (``field``, ``message``, and
    for a value that names nothing, ``value`` and ``suggestion``)."""

    detail: str
    errors: list[dict[str, Any]]

    @classmethod
    def of_values(cls, problems: list[ValueProblem]) -> Refusal:
        return cls("; ".join(f"{p.field}: {p.message}" for p in problems), [dict(p.to_json()) for p in problems])

    @classmethod
    def of_validation(cls, exc: ValidationError) -> Refusal:
        """Pydantic's errors as ``{field, message}`` pairs, fields dotted (``axes.seq``)."""
        errors = [{"field": ".".join(str(p) for p in err.get("loc", ())) or "request", "message": err["msg"]}
                  for err in exc.errors()]
        return cls("; ".join(f"{e['field']}: {e['message']}" for e in errors), errors)


def search(catalog: Catalog, text: str, *, now: datetime,
           source: CatalogCohortSource | None = None) -> Resolution:
    """Resolve a text query; problems in the text are reported beside their tokens, never raised.

    ``source`` lets a caller answering many queries read the catalog version once."""
    source = source or CatalogCohortSource(catalog)
    vocab = source.vocabulary()

    def measured(operation: str, axis: str) -> set[int]:
        op = vocab.operations.get(operation)
        values = (observed_axis(c.sample, axis, op) for c in source.cohorts(operation))
        return {v for v in values if v is not None}

    parsed = parse_query(text, vocab, measured)
    resolution = resolve(parsed.request, source, parsed=parsed.to_json(), candidates=parsed.operation_candidates,
                         suggested=parsed.suggested, now=now)
    return replace(resolution, ignored=tuple((i.token, i.message) for i in parsed.issues))


def validated(body: Mapping[str, Any] | ResolveRequest, source: CatalogCohortSource) -> ResolveRequest | Refusal:
    """A structured request checked and normalised (``rotary`` → ``rope``, ``A100`` → ``a100``)."""
    try:
        request = body if isinstance(body, ResolveRequest) else ResolveRequest.model_validate(body)
    except ValidationError as exc:
        return Refusal.of_validation(exc)
    normalised, problems = normalise_request(request, source.vocabulary())
    return Refusal.of_values(problems) if problems else normalised


def resolve_structured(catalog: Catalog, body: Mapping[str, Any] | ResolveRequest, *, now: datetime,
                       source: CatalogCohortSource | None = None) -> Resolution | Refusal:
    """Resolve a structured request (a JSON object, or one already parsed)."""
    source = source or CatalogCohortSource(catalog)
    request = validated(body, source)
    return request if isinstance(request, Refusal) else resolve(request, source, now=now)
