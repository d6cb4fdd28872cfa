"""The write path of API v1: bundle uploads, measurement requests and the runners' leases, the audit
log, and the changes feed. Every write needs an API key with the route's scope and leaves an audit line."""

from __future__ import annotations

import os
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from kernelindex import urls
from kernelindex.readmodel.changes import MAX_CHANGES, ChangesPage
from kernelindex.services import fleet, reads, writes
from kernelindex.services.audit import audit_log
from kernelindex.trust.uploads import ARCHIVE_MEDIA_TYPES, MAX_ARCHIVE_BYTES
from kernelindex.views.params import REQUEST_STATE_PATTERN
from kernelindex.web.api.auth import BEARER_DEPENDENCY, WRITER, Writer, scoped, writer_of
from kernelindex.web.api.fleet_schemas import ClaimIn, CompleteIn, HeartbeatIn, MeasurementRequestIn
from kernelindex.web.api.integers import STRICT_INTEGER
from kernelindex.web.api.problems import BodyRule, ProblemRoute, accepts_body, answered, problem_responses
from kernelindex.web.api.upload_slots import slots_of, spooled_body
from kernelindex.web.api.write_schemas import (
    AuditOut,
    BundleOut,
    ClaimOut,
    LeaseOut,
    MeasurementRequestOut,
    RequestsOut,
)

router = APIRouter(prefix=urls.API, route_class=ProblemRoute, tags=["v1 write path"])
DEFAULT_LEASE_SECONDS = 120.0
DEFAULT_REQUESTS_PER_KEY = 60  # per KEY_WINDOW; $KERNELINDEX_REQUESTS_PER_KEY or app.state.requests_per_key


def _lease(request: Request) -> float:
    """How long a claim holds without a heartbeat: app.state.lease_seconds, $KERNELINDEX_LEASE_SECONDS or 120."""
    configured = getattr(request.app.state, "lease_seconds", None)
    return float(configured or os.environ.get("KERNELINDEX_LEASE_SECONDS") or DEFAULT_LEASE_SECONDS)
RequestId = Annotated[int, Path(ge=1, le=2**31 - 1), STRICT_INTEGER]
ReplicaNo = Annotated[int, Path(ge=1, le=3), STRICT_INTEGER]


def _answers(description: str, model: Any, *errors: int | str, status: int = 200) -> dict[int | str, Any]:
    """The route's answer (``model``: its response schema, also for 201 where the route creates) and problems."""
    created: dict[int | str, Any] = {201: {"description": description, "model": model}} if status == 201 else {}
    return {200: {"description": description, "model": model}, **created, **problem_responses(*errors, "4XX")}


def _catalog(request: Request) -> Any:
    return request.app.state.catalog


# ---- bundles --------------------------------------------------------------------------------------


@router.post(urls.BUNDLES, summary="Upload a signed result bundle", dependencies=BEARER_DEPENDENCY, openapi_extra={
    "requestBody": {"required": True, "content": {
        m: {"schema": {"type": "string", "format": "binary"}} for m in ARCHIVE_MEDIA_TYPES}}},
    description=f"One bundle directory as a tar.gz archive (`ki publish BUNDLE --server URL` makes it), at most "
                f"{MAX_ARCHIVE_BYTES // (1024 * 1024)} MiB. The server checks the signature, that the runner key is "
                "trusted here and every digest, then publishes in one transaction, as `ki publish` does. The same "
                "bundle again answers 200 with the same body and writes nothing but an audit line. Needs "
                "scope bundles:write.",
    responses=_answers("Published (201 the first time, 200 for a replay)", BundleOut, 401, 403, 408, 413, 415,
                       422, 503, status=201))
@accepts_body(BodyRule(MAX_ARCHIVE_BYTES, ARCHIVE_MEDIA_TYPES, streamed=True))
@scoped("bundles:write", "bundle.upload")
async def post_bundle(request: Request) -> JSONResponse:
    writer = writer_of(request)
    slots = slots_of(request)
    slots.take()  # 503 uploads_busy past the cap, before a byte of the body is read
    try:
        with await spooled_body(request) as body:
            async with slots.verifier():
                result = answered(await run_in_threadpool(writes.upload, _catalog(request), body,
                                                          actor=f"api key {writer.key.name}",
                                                          audit=partial(writer.record, request)))
    finally:
        slots.give()
    return JSONResponse(result.to_json(), status_code=200 if result.replayed else 201)


# ---- measurement requests -----------------------------------------------------------------------


@router.post(urls.ASKS, summary="Ask for a measurement", dependencies=BEARER_DEPENDENCY,
             description="Validated against the operation spec: an impossible shape is a 422 naming the axis. An "
                         "identical open request is merged (its `askers` count goes up). At most 60 requests per "
                         "API key in any 10 minutes (429 with Retry-After past it). Needs scope requests:write.",
             responses=_answers("The request (201 new, 200 merged into an identical open one)",
                                MeasurementRequestOut, 401, 403, 413, 415, 422, 429, status=201))
@scoped("requests:write", "request.create")
def post_request(request: Request, writer: Annotated[Writer, WRITER],
                 body: Annotated[MeasurementRequestIn, Body()]) -> JSONResponse:
    limit = int(getattr(request.app.state, "requests_per_key", None)
                or os.environ.get("KERNELINDEX_REQUESTS_PER_KEY") or DEFAULT_REQUESTS_PER_KEY)
    asked = answered(writes.file_request(_catalog(request), request.app.state.clock(),
                                         body.model_dump(exclude_none=True), key_id=writer.key.key_id, limit=limit,
                                         audit=partial(writer.record, request)))
    return JSONResponse(asked.request, status_code=200 if asked.merged else 201)


@router.get(urls.ASKS, summary="Measurement requests, newest first", responses=_answers("Requests", RequestsOut, 400))
def get_requests(request: Request, state: Annotated[str | None, Query(pattern=REQUEST_STATE_PATTERN)] = None
                 ) -> JSONResponse:
    return JSONResponse(reads.measurement_requests(_catalog(request), request.app.state.clock(), state))


@router.get(urls.REQUEST, summary="One measurement request",
            responses=_answers("The request", MeasurementRequestOut, 404))
def get_request(request: Request, request_id: RequestId) -> JSONResponse:
    return JSONResponse(answered(reads.measurement_request(_catalog(request), request.app.state.clock(), request_id)))


@router.post(urls.CLAIMS, summary="Claim one replica of an open request (runners)",
             dependencies=BEARER_DEPENDENCY,
             description="The oldest claimable replica for this GPU that this runner key has not served, leased "
                         "for `lease_seconds` (renew with heartbeats). 204 when there is none. The claim is signed "
                         "by the runner's private key (see the body), so only that runner can claim as it; the "
                         "runner's name is the one its key is trusted under. Needs bundles:write.",
             responses={**_answers("The claim: request, replica, token, lease", ClaimOut, 401, 403, 413, 415, 422),
                        204: {"description": "Nothing to claim for this GPU"}})
@scoped("bundles:write", "request.claim")
def post_claim(request: Request, writer: Annotated[Writer, WRITER],
               body: Annotated[ClaimIn, Body()]) -> Response:
    claim = answered(fleet.claim(_catalog(request), request.app.state.clock(), body.model_dump(),
                                 lease_seconds=_lease(request), audit=partial(writer.record, request)))
    return Response(status_code=204) if claim is None else JSONResponse(claim)


@router.post(urls.HEARTBEAT, summary="Renew a lease (runners)",
             dependencies=BEARER_DEPENDENCY,
             responses=_answers("The new lease", LeaseOut, 401, 403, 409, 413, 415, 422))
@scoped("bundles:write", "request.heartbeat")
def post_heartbeat(request: Request, request_id: RequestId, replica: ReplicaNo,
                   body: Annotated[HeartbeatIn, Body()]) -> JSONResponse:
    return JSONResponse(answered(fleet.heartbeat(_catalog(request), request_id, replica, body.token,
                                                 lease_seconds=_lease(request))))


@router.post(urls.COMPLETE, summary="Mark a replica done or failed (runners)",
             dependencies=BEARER_DEPENDENCY,
             description="Done: `bundle` names the uploaded bundle, which must carry runs signed by the claiming "
                         "runner, each of the request's workload on its GPU product, observed and first published "
                         "after the claim, in a bundle that completed no other replica (422 `not_fulfilled`). "
                         "Failed: `failure` says why (e.g. an implementation that does not install).",
             responses=_answers("The request", MeasurementRequestOut, 401, 403, 409, 413, 415, 422))
@scoped("bundles:write", "request.complete")
def post_complete(request: Request, writer: Annotated[Writer, WRITER],
                  request_id: RequestId, replica: ReplicaNo, body: Annotated[CompleteIn, Body()]) -> JSONResponse:
    return JSONResponse(answered(fleet.complete(_catalog(request), request.app.state.clock(), request_id, replica,
                                                body.model_dump(), audit=partial(writer.record, request))))


# ---- audit and changes --------------------------------------------------------------------------


@router.get(urls.AUDIT, summary="The audit log (admins)", dependencies=BEARER_DEPENDENCY,
            description="Every write, oldest first: who, scope, action, object digest, time, client address, "
                        "outcome. Page with `after` (the last id seen). Needs scope admin.",
            responses=_answers("Audit entries", AuditOut, 400, 401, 403))
@scoped("admin", "audit.read")
def get_audit(request: Request, after: Annotated[int, Query(ge=0, le=2**62), STRICT_INTEGER] = 0,
              limit: Annotated[int, Query(ge=1, le=1000), STRICT_INTEGER] = 100) -> JSONResponse:
    return JSONResponse(audit_log(_catalog(request), after, limit))


@router.get(urls.CHANGES, summary="What changed: publications, record events, retractions, request completions",
            description="Oldest first. Pass `next_cursor` back as `since` to get only what is new; `since` also "
                        "takes an RFC 3339 instant. A malformed cursor is a 400.",
            responses=_answers("Changes and the cursor to continue from", ChangesPage, 400))
def get_changes(request: Request, since: Annotated[str | None, Query(max_length=300)] = None,
                limit: Annotated[int, Query(ge=1, le=MAX_CHANGES), STRICT_INTEGER] = 100) -> JSONResponse:
    return JSONResponse(answered(reads.changes(_catalog(request), request.app.state.clock(), since, limit)))
