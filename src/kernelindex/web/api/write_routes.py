"""The write path of API v1: bundle uploads, measurement requests and the runners' leases, the audit
log, and the changes feed. Every write needs an API key with the route's scope and leaves an audit line."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from kernelindex import urls
from kernelindex.catalog import audit
from kernelindex.catalog import requests as stored
from kernelindex.readmodel.changes import MAX_CHANGES, ChangesPage
from kernelindex.services import reads, writes
from kernelindex.services.problems import Problem
from kernelindex.trust.claims import ClaimRefused, check_claim, check_fulfils
from kernelindex.trust.uploads import ARCHIVE_MEDIA_TYPES, MAX_ARCHIVE_BYTES
from kernelindex.views.params import REQUEST_STATE_PATTERN, STRICT_INTEGER
from kernelindex.web.api.auth import BEARER_DEPENDENCY, WRITER, Writer, scoped, writer_of
from kernelindex.web.api.fleet_schemas import ClaimIn, CompleteIn, HeartbeatIn, MeasurementRequestIn
from kernelindex.web.api.problems import ApiProblem, BodyRule, ProblemRoute, accepts_body, answered, problem_responses
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
KEY_WINDOW = timedelta(minutes=10)


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
                result = await run_in_threadpool(writes.upload, _catalog(request), body,
                                                 actor=f"api key {writer.key.name}")
    finally:
        slots.give()
    if isinstance(result, Problem):
        writer.record(request, "bundle.upload", f"refused: {result.code}", detail={"reason": result.detail[:500]})
        raise ApiProblem(result)
    writer.record(request, "bundle.upload", "replayed" if result.replayed else "published", result.bundle,
                  {"runner": result.runner, "runs": len(result.runs), "new": result.new})
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
    _within_key_limit(request, writer)
    asked = answered(writes.ask(_catalog(request), request.app.state.clock(), body.model_dump(exclude_none=True)))
    writer.record(request, "request.create", "merged" if asked.merged else "created", asked.request["digest"],
                  {"request": asked.request["id"]})
    return JSONResponse(asked.request, status_code=200 if asked.merged else 201)


def _within_key_limit(request: Request, writer: Writer) -> None:
    """At most ``requests_per_key`` requests filed per API key in any ``KEY_WINDOW`` (counted in the shared
    audit log, so the limit holds across workers); past it a 429 with Retry-After."""
    limit = int(getattr(request.app.state, "requests_per_key", None)
                or os.environ.get("KERNELINDEX_REQUESTS_PER_KEY") or DEFAULT_REQUESTS_PER_KEY)
    now = datetime.now(UTC)
    filed = audit.accepted_for_key_since(_catalog(request), api_key=writer.key.key_id, action="request.create",
                                         since=now - KEY_WINDOW)
    if len(filed) < limit:
        return
    wait = max(1, int((filed[len(filed) - limit] + KEY_WINDOW - now).total_seconds()) + 1)
    writer.record(request, "request.create", "refused: rate_limited")
    raise ApiProblem("rate_limited", f"API key {writer.key.key_id} filed {limit} requests in the last "
                     f"{KEY_WINDOW.seconds // 60} minutes; try again in {wait} seconds.",
                     headers={"retry-after": str(wait)})


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
    catalog = _catalog(request)
    try:
        runner = check_claim(catalog, body.model_dump(), datetime.now(UTC))  # real time, not the display clock
    except ClaimRefused as exc:
        writer.record(request, "request.claim", f"refused: {exc.code}", body.runner_key_id)
        raise ApiProblem(exc.code, str(exc)) from None
    claim = stored.claim(catalog, gpu=body.gpu, runner_key_id=body.runner_key_id, runner_name=runner,
                         lease_seconds=_lease(request), operations=body.operations)
    if claim is None:
        return Response(status_code=204)
    writer.record(request, "request.claim", "claimed", claim.request.digest,
                  {"request": claim.request.id, "replica": claim.replica, "runner": runner})
    return JSONResponse({"request": claim.request.to_json(request.app.state.clock()), "replica": claim.replica,
                         "runner": runner, "token": claim.token, "lease_until": claim.lease_until.isoformat(),
                         "lease_seconds": _lease(request)})


@router.post(urls.HEARTBEAT, summary="Renew a lease (runners)",
             dependencies=BEARER_DEPENDENCY,
             responses=_answers("The new lease", LeaseOut, 401, 403, 409, 413, 415, 422))
@scoped("bundles:write", "request.heartbeat")
def post_heartbeat(request: Request, request_id: RequestId, replica: ReplicaNo,
                   body: Annotated[HeartbeatIn, Body()]) -> JSONResponse:
    try:
        until = stored.heartbeat(_catalog(request), request_id, replica, body.token, _lease(request))
    except stored.LeaseLost as exc:
        raise ApiProblem("lease_lost", str(exc)) from None
    return JSONResponse({"lease_until": until.isoformat(), "lease_seconds": _lease(request)})


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
    if (body.bundle is None) == (body.failure is None):
        raise ApiProblem("invalid_request", "give exactly one of bundle (done) or failure (failed)",
                         [{"field": "bundle", "in": "body", "message": "exactly one of bundle, failure"}])
    catalog = _catalog(request)
    try:
        done = stored.finish(catalog, request_id, replica, body.token, bundle_digest=body.bundle,
                             failure=body.failure, verify=partial(check_fulfils, catalog, body.bundle or ""))
    except stored.LeaseLost as exc:
        raise ApiProblem("lease_lost", str(exc)) from None
    except ClaimRefused as exc:
        writer.record(request, "request.complete", f"refused: {exc.code}", body.bundle,
                      {"request": request_id, "replica": replica, "reason": str(exc)[:500]})
        raise ApiProblem(exc.code, str(exc), [{"field": "bundle", "in": "body", "message": str(exc)}]) from None
    except ValueError as exc:
        raise ApiProblem("invalid_request", str(exc), [{"field": "bundle", "in": "body", "message": str(exc)}]) \
            from None
    writer.record(request, "request.complete", "done" if body.bundle else "failed", body.bundle or done.digest,
                  {"request": request_id, "replica": replica, "failure": body.failure})
    return JSONResponse(done.to_json(request.app.state.clock()))


# ---- audit and changes --------------------------------------------------------------------------


@router.get(urls.AUDIT, summary="The audit log (admins)", dependencies=BEARER_DEPENDENCY,
            description="Every write, oldest first: who, scope, action, object digest, time, client address, "
                        "outcome. Page with `after` (the last id seen). Needs scope admin.",
            responses=_answers("Audit entries", AuditOut, 400, 401, 403))
@scoped("admin", "audit.read")
def get_audit(request: Request, after: Annotated[int, Query(ge=0, le=2**62), STRICT_INTEGER] = 0,
              limit: Annotated[int, Query(ge=1, le=1000), STRICT_INTEGER] = 100) -> JSONResponse:
    items = [e.to_json() for e in audit.entries(_catalog(request), after=after, limit=limit)]
    return JSONResponse({"items": items, "next_after": items[-1]["id"] if items else after})


@router.get(urls.CHANGES, summary="What changed: publications, record events, retractions, request completions",
            description="Oldest first. Pass `next_cursor` back as `since` to get only what is new; `since` also "
                        "takes an RFC 3339 instant. A malformed cursor is a 400.",
            responses=_answers("Changes and the cursor to continue from", ChangesPage, 400))
def get_changes(request: Request, since: Annotated[str | None, Query(max_length=300)] = None,
                limit: Annotated[int, Query(ge=1, le=MAX_CHANGES), STRICT_INTEGER] = 100) -> JSONResponse:
    return JSONResponse(answered(reads.changes(_catalog(request), request.app.state.clock(), since, limit)))
