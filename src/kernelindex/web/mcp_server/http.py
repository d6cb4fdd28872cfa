"""``/mcp`` on the site: the MCP server over streamable HTTP (stateless, JSON responses), answering
from the app's catalog and clock, so a tool and its REST route share the read model's cached answers.

``GET /mcp`` (a server-to-client event stream) is bounded: the server closes a stream idle for
``idle_seconds`` (no event sent: keep-alive pings do not count; a stateless server never has anything
to send), and refuses a stream
past ``max_streams`` open in the worker with 503. Settings: ``$KERNELINDEX_MCP_STREAM_IDLE_SECONDS``
(default 30) and ``$KERNELINDEX_MCP_MAX_STREAMS`` (default 16), read when the app is built
(``app.state.mcp_streams``).

The SDK's session manager runs once per instance, so each run of the app's lifespan starts a fresh
one; a request that arrives outside a lifespan (no manager) gets a 503 problem.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio

from kernelindex import urls
from kernelindex.services.problems import Problem
from kernelindex.web.api.problems import BodyRule, problem_response
from kernelindex.web.mcp_server.server import build_server

MCP_PATH = urls.MCP
MCP_MAX_BODY_BYTES = 1024 * 1024  # a resolve_kernels call of 50 queries of 16 KiB fits
IDLE_SECONDS_ENV, MAX_STREAMS_ENV = "KERNELINDEX_MCP_STREAM_IDLE_SECONDS", "KERNELINDEX_MCP_MAX_STREAMS"


@dataclass(frozen=True)
class StreamLimits:
    idle_seconds: float = 30.0
    max_streams: int = 16

    @classmethod
    def from_environment(cls) -> StreamLimits:
        idle, most = os.environ.get(IDLE_SECONDS_ENV, ""), os.environ.get(MAX_STREAMS_ENV, "")
        try:
            limits = cls(float(idle) if idle else cls.idle_seconds, int(most) if most else cls.max_streams)
        except ValueError:
            limits = cls(-1.0, -1)
        if not (0 < limits.idle_seconds <= 86_400 and 0 < limits.max_streams <= 100_000):
            raise ValueError(f"{IDLE_SECONDS_ENV} must be seconds in (0, 86400] and {MAX_STREAMS_ENV} a whole "
                             f"number in 1..100000; got {idle!r} and {most!r}")
        return limits


class _Endpoint:
    """An ASGI endpoint (not a function), so Starlette hands it the raw request for any method."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.body_rule = BodyRule(MCP_MAX_BODY_BYTES)  # read by web/body_limits.py
        self.open_streams = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        manager = getattr(self.app.state, "mcp_manager", None)
        if manager is None:
            unavailable = problem_response(Problem("unavailable", "The MCP endpoint is starting or stopping; retry."))
            await unavailable(scope, receive, send)
            return
        if scope.get("method") == "GET":
            await self._stream(manager, scope, receive, send)
            return
        await manager.handle_request(scope, receive, send)

    async def _stream(self, manager: Any, scope: Any, receive: Any, send: Any) -> None:
        """One ``GET /mcp`` event stream, closed after ``idle_seconds`` without a message; 503 past the cap."""
        limits: StreamLimits = self.app.state.mcp_streams
        if self.open_streams >= limits.max_streams:
            busy = problem_response(Problem("unavailable", f"{limits.max_streams} MCP event streams are open on this "
                                    "server process, its limit; retry later (tools answer over POST /mcp)."))
            busy.headers["retry-after"] = str(max(1, round(limits.idle_seconds)))
            await busy(scope, receive, send)
            return
        self.open_streams += 1
        response = {"started": False, "ended": False}
        try:
            with anyio.CancelScope() as idle:
                idle.deadline = anyio.current_time() + limits.idle_seconds

                async def send_and_stay(message: Any) -> None:
                    response["started"] = response["started"] or message["type"] == "http.response.start"
                    response["ended"] = message["type"] == "http.response.body" and not message.get("more_body")
                    if message["type"] == "http.response.body" and _carries_event(message.get("body", b"")):
                        idle.deadline = anyio.current_time() + limits.idle_seconds
                    await send(message)

                await manager.handle_request(scope, receive, send_and_stay)
            if response["started"] and not response["ended"]:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            self.open_streams -= 1


def _carries_event(body: bytes) -> bool:
    """Whether an event-stream chunk holds an event, not only comments: the SDK's keep-alive ping every
    15 s (``: ping - …``) is a comment, and must not keep an idle stream open (it reset the 30 s idle
    timer, so ``GET /mcp`` streams never closed)."""
    return any(line.strip() and not line.startswith(b":") for line in body.splitlines())


def mount_mcp(app: Any) -> None:
    """Add the ``/mcp`` route; :func:`mcp_running` (in the app's lifespan) runs its session manager."""
    app.state.mcp_server = build_server(app.state.catalog, app.state.clock)
    app.state.mcp_streams = StreamLimits.from_environment()
    app.router.add_route(MCP_PATH, _Endpoint(app), methods=["GET", "POST", "DELETE"], include_in_schema=False)


@asynccontextmanager
async def mcp_running(app: Any) -> AsyncIterator[None]:
    server = getattr(app.state, "mcp_server", None)
    if server is None:
        yield
        return
    # Public read-only data: no DNS-rebinding host list (host other than localhost turns it off).
    server.streamable_http_app(streamable_http_path=MCP_PATH, stateless_http=True, json_response=True,
                               host="0.0.0.0")
    manager = server.session_manager
    async with manager.run():
        app.state.mcp_manager = manager
        try:
            yield
        finally:
            app.state.mcp_manager = None
