"""Measurement requests as readers see them: the listing, and the "Ask for this measurement" page."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kernelindex import registry, urls
from kernelindex.catalog import requests as stored
from kernelindex.catalog.db import Catalog
from kernelindex.domain.canonical import short_digest
from kernelindex.policy.measurement_requests import RequestSpec
from kernelindex.readmodel.jsonable import JsonModel


def requests_listing(catalog: Catalog, now: datetime, *, state: str | None = None) -> list[dict[str, Any]]:
    """Every request (newest first) with its age and replicas, as pages and the API show them."""
    return [r.to_json(now) for r in stored.list_requests(catalog, state=state)]


@dataclass(frozen=True)
class HeldRequests:
    """The requests as last read (newest first), numbered by ``generation``: a new number each read that
    found them changed, so a page rendered from them is kept by that number (web/answer_scope.py)."""

    generation: int
    requests: list[stored.MeasurementRequest]
    stamp: tuple[int, str | None]
    writes: int
    read_at: float
    until: datetime | None  # the first claim whose lease runs out: from then on it shows as open again


_HELD: dict[str, HeldRequests] = {}
_GENERATIONS = itertools.count(1)


def known_held_requests(catalog: Catalog) -> tuple[HeldRequests, float] | None:
    """The requests as last read and that read's age in seconds, without a database read; None when they must
    be read first: never read, filed, merged, claimed or finished by this process since, or a claim's lease ran
    out."""
    held = _HELD.get(catalog.url)
    if held is None or held.writes != stored.writes_here(catalog) or (
            held.until is not None and datetime.now(UTC) >= held.until):
        return None
    return held, time.monotonic() - held.read_at


def held_requests(catalog: Catalog) -> HeldRequests:
    """Every request (as ``list_requests``), read again only when one was filed, merged, claimed or
    finished — by this process: at once; by another: seen by the stamp, read at most every
    ``catalog.version_fresh_s`` (as the catalog version is) — or when a claim's lease ran out."""
    writes = stored.writes_here(catalog)
    if (known := known_held_requests(catalog)) is not None:
        held, age = known
        if age < catalog.version_fresh_s:
            return held
        stamp = stored.requests_stamp(catalog)
        if stamp == held.stamp:
            held = _HELD[catalog.url] = HeldRequests(held.generation, held.requests, stamp, writes, time.monotonic(),
                                                     held.until)
            return held
    started, stamp = time.monotonic(), stored.requests_stamp(catalog)  # before the listing: a change between shows
    requests = stored.list_requests(catalog)
    until = min((r.lease_until for q in requests for r in q.replicas if r.state == stored.CLAIMED and r.lease_until),
                default=None)
    held = _HELD[catalog.url] = HeldRequests(next(_GENERATIONS), requests, stamp, writes, started, until)
    return held


def ask_url(operation: str, workload_key: str, gpu: str) -> str:
    """The site's "Ask for this measurement" link for one workload on one GPU."""
    return urls.ask(operation, workload_key, gpu)


@dataclass
class AskPage(JsonModel):
    """The confirmation form: the request it files (operation, the workload's axes and dtypes, GPU), how
    the page names them, where the workload was measured, and the identical open request it would join."""

    request: RequestSpec
    operation_title: str
    workload_key: str
    workload_label: str
    gpu_name: str
    measured_on: list[str]
    open_request: dict[str, Any] | None


def ask_page(catalog: Catalog, operation: str, workload_key: str, gpu: str, *, now: datetime, axes: str = "",
             dtypes: str = "") -> AskPage:
    """What the confirmation form shows: the exact workload and GPU, and an open request it would join. A
    workload the catalog does not hold yet (a model's call, issue 49) comes as ``axes`` and ``dtypes``."""
    from kernelindex.readmodel.labels import gpu_label, workload_label
    from kernelindex.readmodel.loading import NotFound, load_operation

    data = load_operation(catalog, operation)
    if not workload_key and axes:
        return _unheld(catalog, data, gpu, axes, dtypes, now)
    digest = next((d for d in data.workloads if short_digest(d) == workload_key), None)
    if digest is None:
        raise NotFound(f"no workload {workload_key!r} of {operation}; pick one on /operations/{operation}")
    gpus = registry.gpus()
    if gpu not in gpus:
        raise NotFound(f"no GPU {gpu!r} in the datasheet table; known: {', '.join(sorted(gpus))}")
    spec = data.workloads[digest].spec
    measured = sorted({gpu_label(data.environments[r.environment]) for r in data.runs
                       if r.workload == digest and r.eligible})
    wanted = RequestSpec(operation, spec.axes, spec.dtypes, gpu, ["forward"], None, 1)
    open_request = next((r.to_json(now) for r in stored.list_requests(catalog, state=None)
                         if r.digest == wanted.digest and r.state in (stored.OPEN, stored.CLAIMED)), None)
    return AskPage(wanted, data.title, workload_key, workload_label(data.operation, data.workloads[digest]),
                   gpus[gpu].name, measured, open_request)


def _pairs(text: str) -> dict[str, str]:
    pairs = [p.split("=", 1) for p in text.split(",") if p]
    return {k.strip(): v.strip() for k, v in (p if len(p) == 2 else (p[0], "") for p in pairs)}


def _unheld(catalog: Catalog, data: Any, gpu: str, axes: str, dtypes: str, now: datetime) -> AskPage:
    """The form for a workload no run has measured yet: its axes checked by the request rules."""
    from kernelindex.domain.manifests import manifest_json
    from kernelindex.policy.measurement_requests import InvalidRequest, validate_request
    from kernelindex.readmodel.loading import NotFound

    bound = {k: int(v) if v.isdigit() else v for k, v in _pairs(axes).items()}
    body = {"operation": data.slug, "axes": bound, "dtypes": _pairs(dtypes), "gpu": gpu}
    try:
        wanted = validate_request(body, manifest_json(data.operation)["spec"], set(registry.gpus()))
    except InvalidRequest as exc:
        raise NotFound(f"no such workload of {data.slug} to ask for: {exc}") from None
    label = " · ".join(f"{k} = {v}" for k, v in wanted.axes.items())
    open_request = next((r.to_json(now) for r in stored.list_requests(catalog, state=None)
                         if r.digest == wanted.digest and r.state in (stored.OPEN, stored.CLAIMED)), None)
    return AskPage(wanted, data.title, "", label, registry.gpus()[gpu].name, [], open_request)
