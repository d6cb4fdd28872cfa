"""Issue 51, item 4 (and 5's disconnect): clients that hold connections open are bounded and cut.

Scaled down from the issue (40 held uploads, 1,000 slow clients, 60 s): against a server with 4 upload
slots, a 1 s header timeout and a 1 s body-idle timeout,

- 6 clients start an 8 MiB upload, send 4 MiB of it and stall: 4 are held, spooled to disk (the server
  process's traced memory grows by under 8 MiB, where reading bodies into memory held 16 MiB and more),
  2 are refused at once with 503 ``uploads_busy``; each held one is answered 408 once its body stalls
  for 1 s, and every slot is free again;
- a client that disconnects mid-upload ends its request with no 500 and no traceback;
- 50 clients that open a connection and send half a request line are all closed within 3 s;
- a ``GET /mcp`` event stream whose only traffic is keep-alive pings (every 0.2 s here) idles out.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest
from fleet_helpers import free_port

from kernelindex.web import body_limits, slow_clients
from kernelindex.web.api.upload_slots import UploadSlots
from kernelindex.web.mcp_server.http import StreamLimits

UPLOAD = 8 * 1024 * 1024
SENT = 4 * 1024 * 1024


@pytest.fixture
def served(app: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[int, Any]]:
    import uvicorn
    from sse_starlette.sse import EventSourceResponse

    monkeypatch.setattr(slow_clients, "HEADER_TIMEOUT_S", 1.0)
    monkeypatch.setattr(body_limits, "BODY_IDLE_S", 1.0)
    monkeypatch.setattr(EventSourceResponse, "DEFAULT_PING_INTERVAL", 0.2)
    app.state.upload_slots = UploadSlots(receiving=4)
    app.state.mcp_streams = StreamLimits(idle_seconds=1.0, max_streams=4)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           http=slow_clients.http_protocol(), timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield port, app
    server.should_exit = True
    thread.join(timeout=10)


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(10)
    return sock


def _start_upload(port: int, token: str) -> socket.socket:
    sock = _connect(port)
    sock.sendall(f"POST /api/v1/bundles HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
                 f"Content-Type: application/gzip\r\nContent-Length: {UPLOAD}\r\n\r\n".encode())
    return sock


def _send_part(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # refused at once (503) and closed: nothing more to send
        sock.sendall(b"\0" * SENT)


def _status(sock: socket.socket) -> int:
    head = sock.recv(256)
    return int(head.split(b" ", 2)[1]) if head else 0


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    except OSError:
        return True
    return True


def test_held_uploads_are_capped_spooled_and_cut(served: tuple[int, Any], tokens: dict[str, str]) -> None:
    port, app = served
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        socks = [_start_upload(port, tokens["bundles:write"]) for _ in range(6)]
        senders = [threading.Thread(target=_send_part, args=(s,)) for s in socks]
        for sender in senders:
            sender.start()
        time.sleep(0.6)  # under the 1 s body timeout: the held ones have sent their 4 MiB
        held = app.state.upload_slots.held
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    for sender in senders:
        sender.join(timeout=10)
    assert held == 4, [s.recv(300) for s in socks]
    assert grown < 8 * 1024 * 1024, grown
    started = time.monotonic()
    statuses = sorted(_status(s) for s in socks)
    assert statuses == [408] * 4 + [503] * 2, statuses
    assert time.monotonic() - started < 5
    for sock in socks:
        sock.close()
    assert app.state.upload_slots.held == 0


def test_a_client_gone_mid_upload_is_no_error(served: tuple[int, Any], tokens: dict[str, str],
                                              caplog: pytest.LogCaptureFixture) -> None:
    port, app = served
    with caplog.at_level(logging.WARNING):
        sock = _start_upload(port, tokens["bundles:write"])
        sock.sendall(b"\0" * 65536)
        time.sleep(0.2)
        sock.close()
        deadline = time.monotonic() + 5
        while app.state.upload_slots.held and time.monotonic() < deadline:
            time.sleep(0.05)
    assert app.state.upload_slots.held == 0
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR], caplog.text


def test_slow_header_clients_are_cut(served: tuple[int, Any]) -> None:
    port, _ = served
    socks = [_connect(port) for _ in range(50)]
    for sock in socks:
        sock.sendall(b"GET /api/v1/gpus HT")
    started = time.monotonic()
    assert all(_closed_within(sock, 3) for sock in socks)
    assert time.monotonic() - started < 3
    for sock in socks:
        sock.close()
    with _connect(port) as fresh:  # a prompt client is answered as ever
        fresh.sendall(b"GET /api/v1/gpus HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert _status(fresh) == 200


def test_an_mcp_stream_with_only_pings_idles_out(served: tuple[int, Any]) -> None:
    port, _ = served
    with _connect(port) as sock:
        sock.sendall(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                     b"mcp-protocol-version: 2025-06-18\r\n\r\n")
        started = time.monotonic()
        head = sock.recv(4096)
        assert head.startswith(b"HTTP/1.1 200"), head
        assert _closed_within(sock, 5)
        assert time.monotonic() - started < 4
