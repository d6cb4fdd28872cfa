"""A connection must finish its request's headers within ``HEADER_TIMEOUT_S`` of opening (or of its last
answer), else the server closes it.

uvicorn times out only an idle keep-alive connection, and only after an answer: a client that opens a
connection and sends its headers a byte at a time (or never) holds it forever (issue 51: 1,000 such
clients were held for 60 s). These protocol classes are uvicorn's own, with one timer: armed when the
connection opens and after each answer, and closing the connection if no new request's headers were
complete when it fires. uvicorn has no such setting (its issue #1563 is open), so it is added here by
subclassing rather than by a proxy in front of every deployment. Bodies are timed in
``web/body_limits.py`` (20 s without a byte), responses that stall in ``web/export_files.py``.

``ki serve`` passes ``http_protocol()`` to uvicorn; ``$KERNELINDEX_HEADER_TIMEOUT_SECONDS`` sets the
timeout (10 s).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT_S = float(os.environ.get("KERNELINDEX_HEADER_TIMEOUT_SECONDS") or 10.0)


class _HeaderDeadline:
    """Mixed into a uvicorn HTTP protocol (which sets ``loop``, ``transport`` and ``cycle``)."""

    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    cycle: Any
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)  # type: ignore[misc]  # the uvicorn protocol after this mixin
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        super().connection_lost(exc)  # type: ignore[misc]

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        self._arm()

    def _arm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        self._header_timer = self.loop.call_later(HEADER_TIMEOUT_S, self._expire, self.cycle)

    def _expire(self, armed_with: Any) -> None:
        if self.cycle is armed_with and not self.transport.is_closing():  # no new request since
            self.transport.close()


class H11WithHeaderTimeout(_HeaderDeadline, H11Protocol):
    pass


def http_protocol() -> type[asyncio.Protocol]:
    """The protocol class ``ki serve`` hands uvicorn: httptools' when it is installed (uvicorn's own
    choice), else h11's, each with the header timeout."""
    return HttpToolsWithHeaderTimeout or H11WithHeaderTimeout


HttpToolsWithHeaderTimeout: type[asyncio.Protocol] | None = None
try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class _HttpToolsWithHeaderTimeout(_HeaderDeadline, HttpToolsProtocol):
        pass

    HttpToolsWithHeaderTimeout = _HttpToolsWithHeaderTimeout
except ImportError:  # httptools is optional in uvicorn
    pass
