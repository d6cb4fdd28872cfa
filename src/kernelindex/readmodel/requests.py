"""Measurement requests as readers see them, and the WorkloadCase a request is measured on.

A request for a binding the catalog already holds is measured on that exact WorkloadCase (same
strides as the runs it will sit beside); a binding the catalog has never seen gets contiguous tensors.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from kernelindex import registry
from kernelindex.catalog import requests as stored
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import ObjectRow, RunRow
from kernelindex.domain.canonical import short_digest
from kernelindex.domain.manifests import build, digest_of, manifest_json
from kernelindex.policy.measurement_requests import RequestSpec, validate_request, workload_spec_for
from kernelindex.readmodel.jsonable import JsonModel


def validated_request(body: dict[str, Any]) -> RequestSpec:
    """Validate a request body against the registry's operation spec and GPU table."""
    from kernelindex.policy.measurement_requests import InvalidRequest, RequestProblem

    try:
        operation = registry.load_operation(str(body.get("operation", "")))
    except registry.RegistryError as exc:
        raise InvalidRequest([RequestProblem("operation", str(exc))]) from None
    spec = operation.model_dump(mode="json")["spec"]
    return validate_request(body, spec, set(registry.gpus()))


def workload_for(catalog: Catalog, request: RequestSpec) -> dict[str, Any]:
    """The WorkloadCase manifest (JSON) the request is measured on."""
    operation = registry.load_operation(request.operation)
    op_digest = digest_of(operation)
    with catalog.engine.connect() as conn:
        measured = select(RunRow.workload).where(RunRow.operation == op_digest).distinct()
        bodies = conn.execute(
            select(ObjectRow.body).where(ObjectRow.kind == "WorkloadCase", ObjectRow.operation == op_digest,
                                         ObjectRow.digest.in_(measured)).order_by(ObjectRow.digest)
        ).scalars().all()
    for body in map(json.loads, bodies):
        if body["spec"]["axes"] == request.axes and body["spec"].get("dtypes", {}) == request.dtypes:
            return body
    spec = workload_spec_for(request, op_digest, operation.model_dump(mode="json")["spec"])
    return manifest_json(build("WorkloadCase", spec))


def requests_listing(catalog: Catalog, now: datetime, *, state: str | None = None) -> list[dict[str, Any]]:
    """Every request (newest first) with its age and replicas, as pages and the API show them."""
    return [r.to_json(now) for r in stored.list_requests(catalog, state=state)]


def requests_stamp(catalog: Catalog) -> tuple[int, str]:
    """Changes whenever a request is made, merged, claimed or finished (pages cache on it: requests
    are not catalog data and do not move the catalog version)."""
    from sqlalchemy import func

    from kernelindex.catalog.models import MeasurementRequestRow

    with catalog.engine.connect() as conn:
        count, latest = conn.execute(select(func.count(), func.max(MeasurementRequestRow.updated_at))).one()
    return int(count), str(latest)


def ask_url(operation: str, workload_key: str, gpu: str) -> str:
    """The site's "Ask for this measurement" link for one workload on one GPU."""
    return f"/requests/new?operation={operation}&workload={workload_key}&gpu={gpu}"


@dataclass
class AskPage(JsonModel):
    operation: str
    operation_title: str
    workload_key: str
    workload_label: str
    axes: dict[str, int]
    dtypes: dict[str, str]
    gpu: str
    gpu_name: str
    measured_on: list[str]
    open_request: dict[str, Any] | None  # the identical open request this ask would join


def ask_page(catalog: Catalog, operation: str, workload_key: str, gpu: str, *, now: datetime) -> AskPage:
    """What the confirmation form shows: the exact workload and GPU, and an open request it would join."""
    from kernelindex.readmodel.labels import gpu_label, workload_label
    from kernelindex.readmodel.loading import NotFound, load_operation

    data = load_operation(catalog, operation)
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
    return AskPage(operation, data.title, workload_key,
                   workload_label(data.operation, data.workloads[digest]), spec.axes, spec.dtypes,
                   gpu, gpus[gpu].name, measured, open_request)
