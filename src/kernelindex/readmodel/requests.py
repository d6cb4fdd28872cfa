"""Measurement requests as readers see them, and the WorkloadCase a request is measured on.

A request for a binding the catalog already holds is measured on that exact WorkloadCase (same
strides as the runs it will sit beside); a binding the catalog has never seen gets contiguous tensors.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import select

from kernelindex import registry
from kernelindex.catalog import requests as stored
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import ObjectRow, RunRow
from kernelindex.domain.manifests import build, digest_of, manifest_json
from kernelindex.policy.measurement_requests import RequestSpec, validate_request, workload_spec_for


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
