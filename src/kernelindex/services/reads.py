"""The questions: one function each, answering the JSON the API serves, or a Problem.

Page questions are the page table's views (``views/table.py``): their ``data()`` is the answer the
HTML renders, the API serves, the CLI prints and MCP returns."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from kernelindex import urls
from kernelindex.catalog import requests as stored
from kernelindex.catalog.db import Catalog
from kernelindex.domain.manifests import KINDS, MANIFEST_MODELS, ManifestError, digest_of, parse_manifest
from kernelindex.readmodel.cache import kept
from kernelindex.readmodel.changes import FEED_SIZE, BadCursor, Change, latest_changes, list_changes
from kernelindex.readmodel.listings import implementations_list, workloads_list
from kernelindex.readmodel.operations import operations_index
from kernelindex.readmodel.pages_gpus import gpus_index
from kernelindex.readmodel.requests import AskPage, ask_page, held_requests, requests_listing
from kernelindex.readmodel.runs import run_samples
from kernelindex.resolve.grammar import MAX_QUERY_CHARS
from kernelindex.resolve.request import ResolveRequest
from kernelindex.resolve.service import Refusal, resolve_structured, search
from kernelindex.resolve.source import CatalogCohortSource
from kernelindex.resolve.use import use_text
from kernelindex.services.problems import READ_ERRORS, Answer, Problem, field_errors, read_refusal
from kernelindex.views.params import RUN_ID, check_subject, given_query
from kernelindex.views.table import VIEW

MAX_BATCH = 50


def page(catalog: Catalog, now: datetime, name: str, subject: str | None = None, **query: Any) -> Answer | Problem:
    """A page's JSON (the view ``name`` of the page table): its arguments checked, its data cached."""
    view = VIEW[name]
    try:
        return view.data(catalog, now, view.arguments(subject, given_query(query)))
    except READ_ERRORS as exc:
        return read_refusal(exc)


# ---- a service's finished answer is kept per catalog version (or the resolver's version) under one key:
# the service's name and the arguments it declares (``readmodel.cache.kept``); no door adds a key of its
# own, so the HTML list, the API's pages and MCP share one computation


def _index(catalog: Catalog, key: tuple[Any, ...], compute: Callable[[], list[Answer]]) -> list[Answer]:
    return kept(catalog, key[0], key[1:], compute)


def gpus(catalog: Catalog) -> list[Answer]:
    """Every GPU of the datasheet table, with what the catalog measured on it (``/gpus``, its API twin, MCP)."""
    return _index(catalog, ("gpus",), lambda: [g.to_json() for g in gpus_index(catalog)])


def operations(catalog: Catalog) -> list[Answer]:
    """Every operation, by slug (``/api/v1/operations``; the search page's families)."""
    return _index(catalog, ("operations",), lambda: [o.to_json() for o in operations_index(catalog)])


def implementations(catalog: Catalog) -> list[Answer]:
    """Every implementation line (``/api/v1/implementations``)."""
    return _index(catalog, ("implementations",), lambda: implementations_list(catalog))


def workloads(catalog: Catalog, operation: str | None) -> list[Answer] | Problem:
    """The workload cases with eligible runs, of one operation or of all (``/api/v1/workloads``)."""
    if operation is not None and operation not in CatalogCohortSource(catalog).operations():
        return Problem("not_found", f"no operation {operation!r} in the catalog; list them at "
                                    f"{urls.api(urls.OPERATIONS)}")
    return _index(catalog, ("workloads", operation), lambda: workloads_list(catalog, operation))


def samples(catalog: Catalog, run_id: str) -> Answer | Problem:
    """A run's raw timing samples, as its signed bundle carries them (``/runs/{id}/samples.json``)."""
    try:
        return run_samples(catalog, check_subject(RUN_ID, run_id))
    except READ_ERRORS as exc:
        return read_refusal(exc)


def feed(catalog: Catalog, now: datetime) -> list[Change]:
    """The latest changes the Atom feed lists (``/feed.atom``), newest first."""
    return latest_changes(catalog, FEED_SIZE, now=now)


def changes(catalog: Catalog, now: datetime, since: str | None, limit: int) -> Answer | Problem:
    """What changed since a cursor or an instant (``GET /api/v1/changes``)."""
    try:
        return list_changes(catalog, now=now, since=since, limit=limit).to_json()
    except BadCursor as exc:
        return Problem("bad_cursor", str(exc))


def resolution(catalog: Catalog, now: datetime, body: dict[str, Any] | ResolveRequest) -> Answer | Problem:
    """A structured request (``POST /api/v1/resolve``, MCP's ``resolve_kernel``) answered, or why it cannot be."""
    outcome = resolve_structured(catalog, body, now=now)
    return _refused(outcome, "invalid_request") if isinstance(outcome, Refusal) else outcome.to_json()


def _refused(refusal: Refusal, code: str, where: str | None = None, prefix: str = "") -> Problem:
    errors = [{**e, "field": prefix + str(e["field"])} for e in refusal.errors]
    return Problem(code, refusal.detail, field_errors(errors, where))


def answer(catalog: Catalog, now: datetime, query: object, source: CatalogCohortSource) -> Answer | Problem:
    """One query of a batch: a string answers as search does, an object as a structured request."""
    if isinstance(query, str):
        if len(query) > MAX_QUERY_CHARS:
            return Problem("invalid_request", f"The query is {len(query)} characters long; queries are at most "
                           f"{MAX_QUERY_CHARS}.", ({"field": "query", "message": "too long"},))
        return search(catalog, query, now=now, source=source).to_json()
    if not isinstance(query, dict):
        return Problem("invalid_request", "A query is either a text query (a string) or a structured request "
                       "(an object with operation, axes, dtype, gpu …).",
                       ({"field": "query", "message": f"got {type(query).__name__}"},))
    outcome = resolve_structured(catalog, query, now=now, source=source)
    return _refused(outcome, "invalid_request") if isinstance(outcome, Refusal) else outcome.to_json()


def batch(catalog: Catalog, now: datetime, queries: list[Any]) -> Answer | Problem:
    """Many queries in one call, answered in order, each cached per catalog version and day; one that
    cannot be answered carries its problem in its own slot and does not fail the others."""
    if not 1 <= len(queries) <= MAX_BATCH:
        return Problem("invalid_request", f"queries: give 1–{MAX_BATCH} queries, not {len(queries)}",
                       ({"field": "queries", "message": f"1–{MAX_BATCH} items"},))
    source = CatalogCohortSource(catalog)
    version = source.version()
    answers = []
    for index, query in enumerate(queries):
        kind = "text" if isinstance(query, str) else "structured"

        def compute(query: object = query) -> Answer | Problem:
            return answer(catalog, now, query, source)

        outcome = kept(catalog, *_batch_key(query, now), compute, version=version)
        if isinstance(outcome, Problem):
            slot = Problem(outcome.code, outcome.detail,
                           tuple({**e, "field": f"queries[{index}].{e['field']}"} for e in outcome.errors))
            answers.append({"index": index, "status": slot.status, "kind": kind, "result": None,
                            "problem": slot.body(urls.api(urls.RESOLVE_BATCH) + f"#queries[{index}]")})
        else:
            answers.append({"index": index, "status": 200, "kind": kind, "result": outcome, "problem": None})
    failed = sum(1 for a in answers if a["problem"])
    return {"count": len(answers), "answered": len(answers) - failed, "failed": failed, "answers": answers}


def _batch_key(query: object, now: datetime) -> tuple[str, tuple[str, str]]:
    """Text answers are keyed on the text; structured ones on their canonical JSON; both on the day
    (staleness moves by days)."""
    day = now.date().isoformat()
    if isinstance(query, str):
        return "search", (day, query)
    return "resolve", (day, json.dumps(query, sort_keys=True))


def use(catalog: Catalog, now: datetime, text: str) -> Answer | Problem:
    """What to run for one exact workload on one GPU (``ki use``, ``GET /api/v1/use``, the use box)."""
    outcome = kept(catalog, "use", (now.date().isoformat(), text), lambda: use_text(catalog, text, now=now))
    return _refused(outcome, "bad_request", "query") if isinstance(outcome, Refusal) else outcome


def measurement_requests(catalog: Catalog, now: datetime, state: str | None = None) -> Answer:
    """Every measurement request (newest first) with its age and replicas."""
    items = requests_listing(catalog, now, state=state)
    return {"items": items, "total": len(items)}


def held_measurement_requests(catalog: Catalog, now: datetime) -> list[Answer]:
    """Every request as last read (``held_requests``: read again only when one changed), as /challenges lists
    them beside its view's data."""
    return [r.to_json(now) for r in held_requests(catalog).requests]


def measurement_request(catalog: Catalog, now: datetime, request_id: int) -> Answer | Problem:
    try:
        return stored.get(catalog, request_id).to_json(now)
    except stored.UnknownRequest as exc:
        return Problem("not_found", f"{exc}; list them at /api/v1/requests")


def ask_form(catalog: Catalog, now: datetime, form: Mapping[str, str]) -> AskPage | Problem:
    """What the site's confirmation form shows for ``operation``, ``workload`` (or ``axes`` and ``dtypes``)
    and ``gpu``: the exact request it files, and an open one it would join."""
    try:
        return ask_page(catalog, form.get("operation", ""), form.get("workload", ""), form.get("gpu", ""), now=now,
                        axes=form.get("axes", ""), dtypes=form.get("dtypes", ""))
    except READ_ERRORS as exc:
        return read_refusal(exc)


def manifest_check(manifest: dict[str, Any]) -> Answer:
    """Whether a manifest validates: its kind and digest, or every problem naming its field."""
    try:
        parsed = parse_manifest(manifest, "manifest")
    except ManifestError as exc:
        return {"valid": False, "kind": manifest.get("kind"), "problems": exc.problems, "digest": None}
    return {"valid": True, "kind": parsed.kind, "problems": [], "digest": digest_of(parsed)}


def manifest_schema(kind: str) -> Answer | Problem:
    if kind not in MANIFEST_MODELS:
        return Problem("not_found", f"no manifest kind {kind!r}; kinds are {', '.join(KINDS)}")
    return {"kind": kind, "schema": MANIFEST_MODELS[kind].model_json_schema()}
