"""The commands: ask for a measurement, upload a bundle. Each returns its outcome or a Problem;
who may do it (API keys, the site form's CSRF token and rate limit) and the audit line are the
front door's, the rules are here."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import IO, Any

from kernelindex import registry
from kernelindex.catalog import requests as stored
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.publish import DuplicateExternalId, ImplementationRedeclared, PublishError
from kernelindex.domain.manifests import build, digest_of, manifest_json
from kernelindex.policy.measurement_requests import (
    InvalidRequest,
    RequestProblem,
    RequestSpec,
    validate_request,
    workload_spec_for,
)
from kernelindex.services.problems import Answer, Problem
from kernelindex.trust.archive import ArchiveError
from kernelindex.trust.bundles import BundleError, NotAMeasurementError, UntrustedRunnerError
from kernelindex.trust.uploads import UploadResult, receive_bundle


@dataclass(frozen=True)
class Asked:
    """A measurement request filed, or merged into an identical open one (its ``askers`` count goes up)."""

    request: Answer
    merged: bool


def validated_request(body: dict[str, Any]) -> RequestSpec:
    """A request body checked against the registry's operation spec and GPU table (InvalidRequest
    names each field at fault)."""
    try:
        operation = registry.load_operation(str(body.get("operation", "")))
    except registry.RegistryError as exc:
        raise InvalidRequest([RequestProblem("operation", str(exc))]) from None
    spec = operation.model_dump(mode="json")["spec"]
    return validate_request(body, spec, set(registry.gpus()))


def workload_for(catalog: Catalog, request: RequestSpec) -> dict[str, Any]:
    """The WorkloadCase manifest (JSON) the request is measured on: the catalog's own case for a
    binding it holds (same strides as the runs it will sit beside), else one of contiguous tensors."""
    operation = registry.load_operation(request.operation)
    op_digest = digest_of(operation)
    if (measured := stored.measured_workload(catalog, op_digest, request.axes, request.dtypes)) is not None:
        return measured
    spec = workload_spec_for(request, op_digest, operation.model_dump(mode="json")["spec"])
    return manifest_json(build("WorkloadCase", spec))


def ask(catalog: Catalog, now: datetime, body: dict[str, Any]) -> Asked | Problem:
    """File a measurement request (``POST /api/v1/requests`` and the site's "Ask for this measurement")."""
    try:
        spec = validated_request(body)
    except InvalidRequest as exc:
        return Problem("invalid_request", str(exc), tuple(p.to_json() for p in exc.problems))
    filed, merged = stored.submit(catalog, spec=spec.to_json(), digest=spec.digest,
                                  workload=workload_for(catalog, spec))
    return Asked(filed.to_json(now), merged)


def upload(catalog: Catalog, archive: bytes | IO[bytes], *, actor: str) -> UploadResult | Problem:
    """Publish an uploaded bundle archive (``POST /api/v1/bundles``): verified once, from memory, then
    published; the same bundle again is a replay that writes nothing. Messages name files inside the
    bundle."""
    try:
        return receive_bundle(catalog, archive, actor=actor)
    except ArchiveError as exc:
        return Problem("archive_invalid", str(exc))
    except UntrustedRunnerError as exc:
        return Problem("untrusted_runner", str(exc))
    except NotAMeasurementError as exc:
        return Problem("not_a_measurement", str(exc))
    except BundleError as exc:
        return Problem("bundle_invalid", str(exc))
    except ImplementationRedeclared as exc:
        return Problem("implementation_redeclared", str(exc))
    except DuplicateExternalId as exc:
        return Problem("duplicate_external_id", str(exc))
    except PublishError as exc:
        return Problem("unpublishable", str(exc))
