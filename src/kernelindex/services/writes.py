"""The commands: ask for a measurement (with an API key, or anonymously on the site's form), upload a
bundle. Each returns its outcome or a Problem. Who may do it (API keys, the site form's CSRF token) is the
front door's; the rules, the limits on how often and what the audit line says are here, written through
the ``Audit`` the door passes (services/audit.py)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import IO, Any

from kernelindex import registry
from kernelindex.catalog import audit as log
from kernelindex.catalog import requests as stored
from kernelindex.catalog.audit import ANONYMOUS
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
from kernelindex.services import reads
from kernelindex.services.audit import Audit, seconds_to_wait
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


KEY_WINDOW = timedelta(minutes=10)  # an API key files at most its limit of requests in any such window
SITE_ASKS = 5  # the site form: each client address at most this many per SITE_WINDOW
SITE_WINDOW = timedelta(minutes=10)


def file_request(catalog: Catalog, now: datetime, body: dict[str, Any], *, key_id: str, limit: int,
                 audit: Audit) -> Asked | Problem:
    """``POST /api/v1/requests``: at most ``limit`` requests per API key in any ``KEY_WINDOW`` (a
    ``rate_limited`` Problem with Retry-After past it), then ``ask``. ``now`` is the display clock; the
    window is counted in real time, as the audit log records API writes."""
    real = datetime.now(UTC)
    filed = log.accepted_for_key_since(catalog, api_key=key_id, action="request.create", since=real - KEY_WINDOW)
    if wait := seconds_to_wait(filed, limit, KEY_WINDOW, real):
        audit("request.create", "refused: rate_limited")
        retry = max(1, int(wait) + 1)
        return Problem("rate_limited", f"API key {key_id} filed {limit} requests in the last "
                       f"{KEY_WINDOW.seconds // 60} minutes; try again in {retry} seconds.",
                       headers={"retry-after": str(retry)})
    asked = ask(catalog, now, body)
    if not isinstance(asked, Problem):
        audit("request.create", "merged" if asked.merged else "created", asked.request["digest"],
              {"request": asked.request["id"]})
    return asked


def ask_on_site(catalog: Catalog, now: datetime, form: Mapping[str, str], *, client: str,
                audit: Audit) -> Asked | Problem:
    """The site's "Ask for this measurement" form, filed anonymously: at most ``SITE_ASKS`` per client
    address in any ``SITE_WINDOW``, then the request the confirmation page showed (``ask_page``)."""
    asked_here = log.accepted_since(catalog, actor=ANONYMOUS, action="request.create", client=client,
                                    since=now - SITE_WINDOW)
    if wait := seconds_to_wait(asked_here, SITE_ASKS, SITE_WINDOW, now):
        audit("request.create", "refused: rate_limited")
        wait = max(wait, 1.0)
        return Problem("rate_limited", f"This address asked {SITE_ASKS} times in the last "
                       f"{SITE_WINDOW.seconds / 60:.0f} minutes; try again in {_in_words(wait)}.",
                       headers={"retry-after": str(math.ceil(wait))})
    if isinstance(page := reads.ask_form(catalog, now, form), Problem):
        return page
    wanted = page.request
    asked = ask(catalog, now, {"operation": wanted.operation, "axes": wanted.axes, "dtypes": wanted.dtypes,
                               "gpu": wanted.gpu, "replicas": 2 if form.get("replicas") == "2" else 1})
    if not isinstance(asked, Problem):
        audit("request.create", "merged" if asked.merged else "created", asked.request["digest"],
              {"request": asked.request["id"], "via": "site form"})
    return asked


def _in_words(seconds: float) -> str:
    if seconds < 90:
        return f"{math.ceil(seconds)} seconds"
    return f"{math.ceil(seconds / 60)} minutes"


def upload(catalog: Catalog, archive: bytes | IO[bytes], *, actor: str,
           audit: Audit | None = None) -> UploadResult | Problem:
    """Publish an uploaded bundle archive (``POST /api/v1/bundles``): verified once, from memory, then
    published; the same bundle again is a replay that writes nothing. Messages name files inside the
    bundle."""
    outcome = _received(catalog, archive, actor)
    if audit is None:
        return outcome
    if isinstance(outcome, Problem):
        audit("bundle.upload", f"refused: {outcome.code}", detail={"reason": outcome.detail[:500]})
    else:
        audit("bundle.upload", "replayed" if outcome.replayed else "published", outcome.bundle,
              {"runner": outcome.runner, "runs": len(outcome.runs), "new": outcome.new})
    return outcome


def _received(catalog: Catalog, archive: bytes | IO[bytes], actor: str) -> UploadResult | Problem:
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
