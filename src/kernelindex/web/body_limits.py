"""Request bodies are refused past their route's limit before they are buffered, as one ASGI middleware.

The limit of a route is its endpoint's ``body_rule`` (``api/problems.py``: ``accepts_body``), 16 KiB for
any other API write. A body declared larger (``Content-Length``) is answered 413 before the application
runs; a body that grows past the limit while it streams (chunked, or longer than declared) stops the
application at that chunk and is answered 413, so at most the limit plus one chunk is ever held. Where no
route takes a body (pages, GET routes, unknown paths) the application answers as it would (405, 404, the
page) without reading one, and reading even one byte there is the 413. The answer is an RFC 9457 problem
(``payload_too_large``) naming the limit.

A body is also bounded in time: a client that sends no byte of its body for ``BODY_IDLE_S`` (20 s,
``$KERNELINDEX_BODY_IDLE_SECONDS``) is answered 408 ``request_timeout`` and the connection closed, and
a client that goes away mid-body ends the request quietly (it was a 500 with a traceback): there is
nobody left to answer.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any

from fastapi.routing import APIRoute
from starlette.routing import compile_path

from kernelindex.services.problems import Problem
from kernelindex.web.api.problems import BodyRule, problem_response

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
API_WRITE = BodyRule()
BODY_METHODS = ("POST", "PUT", "PATCH")


BODY_IDLE_S = float(os.environ.get("KERNELINDEX_BODY_IDLE_SECONDS") or 20.0)


class BodyTooLarge(Exception):
    """Raised from ``receive`` to stop an application reading a body past its limit."""


class BodyStalled(Exception):
    """Raised from ``receive`` when the client sent nothing of its body for ``BODY_IDLE_S``."""


class ClientGone(Exception):
    """Raised from ``receive`` when the client disconnected before its body was read."""


@dataclass
class _Stream:
    limit: int
    seen: int = 0
    over: bool = False
    answered: bool = False
    stopped: str = ""  # "stalled" or "gone": the body was not read to its end, for that reason
    complete: bool = False  # the last chunk arrived: later receives (disconnect listeners) pass through


@dataclass(frozen=True)
class _Limit:
    path: re.Pattern[str]
    methods: frozenset[str]
    limit: int


def route_limits(routes: Iterable[Any], prefix: str = "") -> list[_Limit]:
    """The body limit of every route that takes a body, from its endpoint's ``body_rule`` (16 KiB for an API
    route without one, 0 for any other route). Routers included in others are walked with their prefix."""
    limits = []
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:  # FastAPI keeps an included router whole; older versions copy its routes
            context = getattr(route, "include_context", None)
            limits += route_limits(included.routes, prefix + str(getattr(context, "prefix", "") or ""))
            continue
        methods = frozenset(getattr(route, "methods", None) or ()) & frozenset(BODY_METHODS)
        if not methods:
            continue
        rule = getattr(getattr(route, "endpoint", None), "body_rule", None)
        if rule is None and isinstance(route, APIRoute):
            rule = API_WRITE
        limits.append(_Limit(compile_path(prefix + route.path)[0], methods, rule.limit if rule else 0))
    return limits


def body_limit(limits: list[_Limit], scope: Scope) -> int | None:
    """The most bytes the route that ``scope`` names accepts as its body; None where no route takes one."""
    method, path = scope["method"], scope["path"]
    return next((item.limit for item in limits if method in item.methods and item.path.match(path)), None)


def declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length" and value.strip().isdigit():
            return int(value)
    return None


def _chunked(scope: Scope) -> bool:
    return any(name.lower() == b"transfer-encoding" for name, _ in scope.get("headers", []))


def _stalled() -> Any:
    response = problem_response(Problem("request_timeout", f"The request body stalled: nothing arrived for "
                                        f"{BODY_IDLE_S:g} seconds. Send the body at once, then wait for the answer."))
    response.headers["connection"] = "close"
    return response


async def _next_chunk(receive: Receive, stream: _Stream) -> Message:
    try:
        message = await asyncio.wait_for(receive(), BODY_IDLE_S)
    except TimeoutError:
        stream.stopped = "stalled"
        raise BodyStalled(f"nothing for {BODY_IDLE_S:g} s") from None
    if message["type"] == "http.disconnect":
        stream.stopped = "gone"
        raise ClientGone("the client went away")
    return message


def _too_large(limit: int) -> Any:
    body = f"Request bodies here are at most {limit:,} bytes." if limit else "This address takes no request body."
    response = problem_response(Problem("payload_too_large", body))
    response.headers["connection"] = "close"  # or the server would go on reading (and dropping) the rest
    return response


class BodyLimit:
    """Refuses oversized request bodies with 413, from their declared length or while they stream."""

    def __init__(self, app: ASGIApp, routes_of: Any) -> None:
        self.app = app
        self.routes_of = routes_of  # the FastAPI app whose routes decide each limit
        self.limits: list[_Limit] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = declared_length(scope)
        if scope["method"] not in BODY_METHODS and not declared and not _chunked(scope):
            await self.app(scope, receive, send)  # no body: nothing to count
            return
        if self.limits is None:  # built on the first body: every route is registered by then
            self.limits = route_limits(self.routes_of.routes)
        limit = body_limit(self.limits, scope)
        stream = _Stream(limit or 0)
        if limit is not None and declared is not None and declared > limit:
            await _too_large(stream.limit)(scope, receive, send)
            return

        async def limited_receive() -> Message:
            if stream.over:
                raise BodyTooLarge(f"over {stream.limit} bytes")
            if stream.stopped:
                return {"type": "http.disconnect"}
            if stream.complete:
                return await receive()
            message = await _next_chunk(receive, stream)
            if message["type"] == "http.request":
                stream.complete = not message.get("more_body", False)
                stream.seen += len(message.get("body", b""))
                if stream.seen > stream.limit:
                    stream.over = True
                    raise BodyTooLarge(f"over {stream.limit} bytes")
            return message

        async def guarded_send(message: Message) -> None:
            if (stream.over or stream.stopped) and not stream.answered:
                return  # whatever the application says after its body was cut off, the answer is the 413
            stream.answered = stream.answered or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except Exception:
            if not (stream.over or stream.stopped):
                raise
        if stream.answered:
            return
        if stream.over:
            await _too_large(stream.limit)(scope, receive, send)
        elif stream.stopped == "stalled":
            await _stalled()(scope, receive, send)
