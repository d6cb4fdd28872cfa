"""RFC 9457 problem details with stable codes, and a route class that turns every API error into one.

The route class catches errors inside each API handler, so the API's error shape does not depend
on the app's global handlers: 400 bad parameters and cursors, 404 unknown ids, 413 oversized
bodies, 415 non-JSON bodies, 422 well-formed bodies that do not validate.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar, get_origin

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.responses import Response

from kernelindex.services.problems import CODE_OF_STATUS, STATUS, Problem

T = TypeVar("T")

MAX_BODY_BYTES = 16 * 1024
MAX_QUERY_STRING = 2048


class ApiProblem(Exception):
    """A :class:`Problem` raised where a route cannot return one (guards, body checks, a service's
    problem ending the handler); :class:`ProblemRoute` answers it."""

    def __init__(self, code: str | Problem, detail: str = "", errors: list[dict[str, Any]] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        self.problem = code if isinstance(code, Problem) else Problem(code, detail, tuple(errors or ()), headers or {})
        super().__init__(self.problem.detail)


def answered(outcome: T | Problem) -> T:
    """A service's answer, or its problem raised as the route's answer."""
    if isinstance(outcome, Problem):
        raise ApiProblem(outcome)
    return outcome


def problem_response(problem: Problem, instance: str | None = None) -> JSONResponse:
    """The one place a Problem becomes an HTTP answer: problem+json, with its status and headers."""
    return JSONResponse(problem.body(instance), status_code=problem.status,
                        media_type="application/problem+json", headers=dict(problem.headers) or None)


def _json_problem(err: Any) -> Problem:
    """A body that is not JSON: FastAPI puts the decoder's character offset where a field would be, so
    it is reported as the position it is, with the decoder's reason, and no field."""
    position = (err.get("loc") or ("body", None))[-1]
    reason = (err.get("ctx") or {}).get("error") or err.get("msg", "")
    where = f" at character {position}" if isinstance(position, int) else ""
    error = {"in": "body", "position": position if isinstance(position, int) else None, "message": str(reason)}
    return Problem("invalid_json", f"The body is not valid JSON{where}: {reason}. Send a JSON object.", (error,))


def validation_problem(exc: RequestValidationError) -> Problem:
    if bad := next((err for err in exc.errors() if err.get("type") == "json_invalid"), None):
        return _json_problem(bad)
    errors = []
    in_body = False
    for err in exc.errors():
        loc = [str(p) for p in err.get("loc", ())]
        in_body = in_body or (loc[:1] == ["body"])
        errors.append({"field": ".".join(loc[1:]) or loc[0] if loc else "request", "in": loc[0] if loc else "request",
                       "message": err.get("msg", "")})
    detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
    return Problem("invalid_request" if in_body else "bad_request", detail, tuple(errors))


@dataclass(frozen=True)
class BodyRule:
    """What a route accepts as its body: at most ``limit`` bytes of one of ``media_types``. A ``streamed``
    body is left unread for the endpoint to stream (web/body_limits.py still counts it against ``limit``)."""

    limit: int = MAX_BODY_BYTES
    media_types: tuple[str, ...] = ("application/json",)
    streamed: bool = False


def accepts_body(rule: BodyRule) -> Callable[[Any], Any]:
    """Decorate an endpoint that takes another body than small JSON (a bundle archive)."""
    def mark(endpoint: Any) -> Any:
        endpoint.body_rule = rule
        return endpoint
    return mark


async def _check_body(request: Request, rule: BodyRule) -> None:
    if request.method not in ("POST", "PUT", "PATCH"):
        return
    too_large = f"Request bodies here are at most {rule.limit:,} bytes."
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > rule.limit:
        raise ApiProblem("payload_too_large", too_large)
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if rule.streamed:
        if media not in rule.media_types:
            raise ApiProblem("unsupported_media_type", f"Send the request body as {' or '.join(rule.media_types)}.")
        return
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > rule.limit:
            raise ApiProblem("payload_too_large", too_large)
    request._body = bytes(body)
    if media not in rule.media_types:
        raise ApiProblem("unsupported_media_type", f"Send the request body as {' or '.join(rule.media_types)}.")
    if media == "application/json":
        _refuse_duplicate_keys(request._body)


def _refuse_duplicate_keys(body: bytes) -> None:
    """A JSON object that names a key twice is ambiguous (parsers keep the first, the last, or fail):
    refused, naming the key. Anything else that is not JSON is left to the body's validation."""
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in items:
            if key in seen:
                raise ApiProblem("invalid_json", f"The body names the key {key[:64]!r} twice in one object; each "
                                 "key may appear once.",
                                 [{"field": key[:64], "in": "body", "message": "duplicate key"}])
            seen.add(key)
        return dict(items)

    try:
        json.loads(body, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return


_HTTP_CODES = {**CODE_OF_STATUS, 400: "invalid_json"}  # a 400 the framework raises in a handler: a body it cannot read


class ProblemRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            try:
                if len(request.scope.get("query_string", b"")) > MAX_QUERY_STRING:
                    raise ApiProblem("query_too_long", f"Query strings are at most {MAX_QUERY_STRING} bytes.")
                _check_params(request, self)
                if authorize := getattr(self.endpoint, "authorize", None):
                    request.state.writer = authorize(request)
                await _check_body(request, getattr(self.endpoint, "body_rule", BodyRule()))
                return await handler(request)
            except ApiProblem as raised:
                return problem_response(raised.problem, request.url.path)
            except RequestValidationError as exc:
                return problem_response(validation_problem(exc), request.url.path)
            except HTTPException as exc:
                code = _HTTP_CODES.get(exc.status_code, "bad_request")
                return problem_response(Problem(code, str(exc.detail)), request.url.path)

        return route


def _check_params(request: Request, route: APIRoute) -> None:
    allowed = {p.alias for p in route.dependant.query_params}
    unknown = sorted(set(request.query_params.keys()) - allowed)
    if unknown:
        expected = ", ".join(sorted(allowed)) or "no query parameters"
        raise ApiProblem("unknown_parameter", f"Unknown query parameter(s) {', '.join(unknown)}; this endpoint takes "
                         f"{expected}.", [{"field": u, "in": "query", "message": "unknown parameter"} for u in unknown])
    repeatable = {p.alias for p in route.dependant.query_params if get_origin(p.field_info.annotation) is list}
    for name in allowed - repeatable:
        if len(request.query_params.getlist(name)) > 1:
            raise ApiProblem("bad_request", f"The parameter {name!r} was given more than once.",
                             [{"field": name, "in": "query", "message": "give it once"}])


PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["type", "title", "status", "detail", "code"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "code": {"type": "string", "enum": sorted(STATUS)},
        "instance": {"type": "string"},
        "errors": {"type": "array", "items": {"type": "object"}},
    },
}


def problem_responses(*statuses: int | str) -> dict[int | str, dict[str, Any]]:
    descriptions = {400: "Bad parameter, cursor or query", 401: "No API key, or one that is malformed, unknown or "
                    "revoked", 403: "The API key lacks the scope this route needs", 404: "Unknown id",
                    408: "The request body stalled", 409: "The claim no longer holds the lease", 413: "Body too large",
                    415: "Body is not of the accepted media type", 422: "Body does not validate",
                    429: "Too many requests from this client",
                    503: "Busy: every slot is in use (Retry-After says when to come back)",
                    "4XX": "Any other client error"}
    return {
        s: {"description": descriptions[s], "content": {"application/problem+json": {"schema": PROBLEM_SCHEMA}}}
        for s in statuses
    }
