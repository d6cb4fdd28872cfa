"""The two entry points every surface uses: a text query and a structured request, one resolver."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from kernelindex.catalog.db import Catalog
from kernelindex.resolve.grammar import parse_query
from kernelindex.resolve.request import ResolveRequest, ValueProblem, normalise_request
from kernelindex.resolve.resolver import observed_axis, resolve
from kernelindex.resolve.results import Resolution
from kernelindex.resolve.source import CatalogCohortSource


class RequestProblems(ValueError):
    """A structured request names things that do not exist; each problem carries a suggestion."""

    def __init__(self, problems: list[ValueProblem]) -> None:
        super().__init__("; ".join(f"{p.field}: {p.message}" for p in problems))
        self.problems = problems


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
                         now=now)
    return replace(resolution, ignored=tuple((i.token, i.message) for i in parsed.issues))


def resolve_structured(catalog: Catalog, request: ResolveRequest, *, now: datetime,
                       source: CatalogCohortSource | None = None) -> Resolution:
    """Resolve a structured request; raises :class:`RequestProblems` when a value names nothing."""
    source = source or CatalogCohortSource(catalog)
    normalised, problems = normalise_request(request, source.vocabulary())
    if problems:
        raise RequestProblems(problems)
    return resolve(normalised, source, now=now)
