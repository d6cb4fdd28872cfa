"""MCP client errors and event streams (issue 23, item 5): an unknown prompt rendered a traceback
(~285 ms, 11 KB of log) and answered JSON-RPC code 0; `GET /mcp` streams were never closed (800 held
for 30 s, open files 31 → 831)."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kernelindex.catalog.db import Catalog
from kernelindex.web.mcp_server.http import MAX_STREAMS_ENV, StreamLimits

RPC = {"accept": "application/json, text/event-stream", "content-type": "application/json",
       "mcp-protocol-version": "2025-06-18"}


@pytest.fixture(scope="module")
def mcp_app(catalog: Catalog) -> Any:
    from kernelindex.web.app import create_app

    app = create_app(catalog)
    app.state.mcp_streams = StreamLimits(idle_seconds=0.5, max_streams=2)
    return app


def _rpc(client: TestClient, method: str, params: dict[str, Any]) -> dict[str, Any]:
    answer = client.post("/mcp", json={"jsonrpc": "2.0", "id": 7, "method": method, "params": params}, headers=RPC)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


@pytest.mark.parametrize(("method", "params", "named"), [
    ("prompts/get", {"name": "nope"}, "Unknown prompt 'nope'"),
    ("prompts/get", {"name": "p" * 100_000}, "Unknown prompt '" + "p" * 64 + "'…"),
    ("tools/call", {"name": "nope", "arguments": {}}, "Unknown tool 'nope'"),
    ("resources/read", {"uri": "kernelindex://nope"}, "Unknown resource"),
])
def test_unknown_names_are_invalid_params_without_a_traceback(
        mcp_app: Any, caplog: pytest.LogCaptureFixture, method: str, params: dict[str, Any], named: str) -> None:
    with TestClient(mcp_app) as client, caplog.at_level(logging.DEBUG):
        answer = _rpc(client, method, params)
    assert answer["error"]["code"] == -32602 and answer["error"]["message"].startswith(named)
    assert len(answer["error"]["message"]) < 200
    assert not [r for r in caplog.records if r.exc_info] and "Traceback" not in caplog.text


@pytest.fixture(scope="module")
def live(mcp_app: Any) -> Iterator[tuple[str, int]]:
    import uvicorn

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(mcp_app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    yield ("127.0.0.1", port)
    server.should_exit = True
    thread.join(timeout=10)


def _open_stream(address: tuple[str, int]) -> tuple[socket.socket, bytes]:
    conn = socket.create_connection(address, timeout=10)
    conn.sendall(b"GET /mcp HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n"
                 b"MCP-Protocol-Version: 2025-06-18\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head and (piece := conn.recv(4096)):
        head += piece
    return conn, head


def _ended_within(conn: socket.socket, head: bytes, seconds: float) -> bool:
    """Whether the server ends the chunked response (its last chunk, or closing the connection)."""
    conn.settimeout(seconds)
    seen = head
    try:
        while not seen.endswith(b"0\r\n\r\n") and (piece := conn.recv(4096)):
            seen += piece
    except TimeoutError:
        return False
    return True


def test_event_streams_are_capped_and_closed_when_idle(live: tuple[str, int]) -> None:
    streams = [_open_stream(live) for _ in range(2)]
    assert all(head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head for _, head in streams)
    third, head = _open_stream(live)
    assert head.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in head.lower()
    third.close()
    started = time.monotonic()
    assert all(_ended_within(conn, head, 5) for conn, head in streams)  # idle 0.5 s: the server ends each
    assert time.monotonic() - started < 3
    for conn, _ in streams:
        conn.close()
    again, head = _open_stream(live)  # the closed streams no longer count
    assert head.startswith(b"HTTP/1.1 200")
    again.close()


def test_stream_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert StreamLimits.from_environment() == StreamLimits(30.0, 16)
    monkeypatch.setenv(MAX_STREAMS_ENV, "4")
    assert StreamLimits.from_environment().max_streams == 4
    monkeypatch.setenv(MAX_STREAMS_ENV, "lots")
    with pytest.raises(ValueError, match="KERNELINDEX_MCP_MAX_STREAMS"):
        StreamLimits.from_environment()
