"""HEAD answers exactly what GET answers, without the body (RFC 9110 §9.3.2).

FastAPI registers page and API routes for GET only, so HEAD met 405 everywhere while the 405
itself said ``allow: GET, HEAD``. This pure ASGI middleware runs the GET and drops its body,
keeping status and headers (Content-Length included)."""

from __future__ import annotations

from kernelindex.web.security import ASGIApp, Message, Receive, Scope, Send


class HeadAsGet:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "HEAD":
            await self.app(scope, receive, send)
            return

        async def send_without_body(message: Message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, send_without_body)
