"""HTTP hardening and request logging, as one pure ASGI middleware.

Every response gets the security headers; successful public reads (GET/HEAD, 2xx and 304) get cache
headers, everything else ``no-store``; every request is logged with its status and duration.
An error nothing else handled is logged with its traceback and answered by ``on_error`` (the
site's error page or a problem+json), so even a crash carries the security headers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from kernelindex import urls

CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"strict-origin-when-cross-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=(), interest-cohort=()"),
)
# Pages and JSON reads change only when the catalog is published to: a short shared cache with
# revalidation is safe. Static assets are referenced with a content hash (?v=...) and never change.
CACHE_PUBLIC_READ = b"public, max-age=60, stale-while-revalidate=300"
CACHE_STATIC = b"public, max-age=31536000, immutable"
CACHE_NONE = b"no-store"
CACHE_REVALIDATE = b"no-cache"  # stored, but checked (ETag) on every use: /challenges' live requests

log = logging.getLogger("kernelindex.web.access")
error_log = logging.getLogger("kernelindex.web")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
ErrorResponder = Callable[[Scope], ASGIApp]


def cache_control_for(method: str, path: str, status: int) -> bytes:
    """The Cache-Control value for one response."""
    if method not in ("GET", "HEAD") or status >= 400 or (300 <= status < 400 and status != 304):
        return CACHE_NONE  # errors and redirects are never stored by shared caches
    if path.startswith(urls.STATIC + "/"):
        return CACHE_STATIC
    return CACHE_PUBLIC_READ


class SecurityMiddleware:
    """Adds security and cache headers to every HTTP response and logs each request."""

    def __init__(self, app: ASGIApp, on_error: ErrorResponder | None = None) -> None:
        self.app = app
        self.on_error = on_error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        method: str = scope.get("method", "GET")
        path: str = scope.get("path", "")
        status_holder = [500]
        started_response = [False]

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                started_response[0] = True
                status = int(message["status"])
                status_holder[0] = status
                asked = [v for k, v in message.get("headers", []) if k.lower() == b"cache-control"]
                headers = [
                    (k, v) for k, v in message.get("headers", []) if k.lower() != b"cache-control"
                ]
                existing = {k.lower() for k, _ in headers}
                headers.extend(h for h in SECURITY_HEADERS if h[0] not in existing)
                # A response that must not be stored (a form with its CSRF cookie), or be used unchecked (a
                # page showing the live requests), says so itself.
                policy = next((own for own in (CACHE_NONE, CACHE_REVALIDATE) if own in asked),
                              cache_control_for(method, path, status))
                headers.append((b"cache-control", policy))
                message["headers"] = headers
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception:
            error_log.exception("unhandled error answering %s %s", method, path)
            if started_response[0] or self.on_error is None:
                raise
            status_holder[0] = 500
            await self.on_error(scope)(scope, receive, send_with_headers)
        finally:
            duration_ms = (time.perf_counter() - started) * 1000
            query = scope.get("query_string", b"").decode("latin-1")
            target = f"{path}?{query}" if query else path
            log.info("%s %s %d %.1fms", method, target, status_holder[0], duration_ms)
