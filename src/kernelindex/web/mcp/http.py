"""``/mcp`` on the site: the MCP server over streamable HTTP (stateless, JSON responses), answering
from the app's catalog and clock, so a tool and its REST route share the read model's cached answers.

The SDK's session manager runs once per instance, so each run of the app's lifespan starts a fresh
one; a request that arrives outside a lifespan (no manager) gets a 503 problem.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi.responses import JSONResponse

from kernelindex.web.api.problems import BodyRule
from kernelindex.web.mcp.server import build_server

MCP_PATH = "/mcp"
MCP_MAX_BODY_BYTES = 1024 * 1024  # a resolve_kernels call of 50 queries of 16 KiB fits


class _Endpoint:
    """An ASGI endpoint (not a function), so Starlette hands it the raw request for any method."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.body_rule = BodyRule(MCP_MAX_BODY_BYTES)  # read by web/body_limits.py

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        manager = getattr(self.app.state, "mcp_manager", None)
        if manager is None:
            body = {"type": "https://kernelindex.dev/problems/unavailable", "title": "Service unavailable",
                    "status": 503, "detail": "The MCP endpoint is starting or stopping; retry.", "code": "unavailable"}
            await JSONResponse(body, status_code=503, media_type="application/problem+json")(scope, receive, send)
            return
        await manager.handle_request(scope, receive, send)


def mount_mcp(app: Any) -> None:
    """Add the ``/mcp`` route; :func:`mcp_running` (in the app's lifespan) runs its session manager."""
    app.state.mcp_server = build_server(app.state.catalog, app.state.clock)
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
