"""Issue 51, item 1: clients that ask for the export and stop reading must not starve anything else.

The attack, scaled down (the issue used 40 readers against a pool of 15): 8 clients send
``GET /api/v1/export`` on sockets with a 4 KiB receive buffer and never read, against a server whose
database pool holds 4 connections (no overflow, 2 s wait). The export is ~16 MiB, far more than the
kernel and uvicorn buffer, so every download stalls. While they stall, reads and writes that need the
database keep answering (p99 < 1 s), no pooled connection is held, the readers past the cap are refused
at once (503 with Retry-After), a stalled reader is cut after the send timeout, and a new download
succeeds as soon as the readers go, with its size announced."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fleet_helpers import free_port
from sqlalchemy import create_engine, event, insert
from sqlalchemy.orm import sessionmaker

from kernelindex.catalog.db import Catalog, _sqlite_pragmas
from kernelindex.catalog.models import ObjectRow
from kernelindex.web.export_files import ExportFiles

READERS = 8
POOL = 4
CAP = 4
ROWS, ROW_BYTES = 128, 128 * 1024  # a 16 MiB export


@pytest.fixture
def small_pool(empty_catalog: Catalog) -> Iterator[Catalog]:
    """The test catalog behind a pool of POOL connections that waits 2 s for one, with 16 MiB to export."""
    engine = create_engine(empty_catalog.engine.url, pool_size=POOL, max_overflow=0, pool_timeout=2)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    now = datetime.now(UTC)
    with engine.begin() as conn:  # large stored objects: only the export's size matters here
        conn.execute(insert(ObjectRow), [{"digest": f"sha256:{i:064x}", "kind": "WorkloadSuite", "name": None,
                                          "operation": None, "body": '{"pad":"' + "x" * ROW_BYTES + '"}',
                                          "created_at": now} for i in range(ROWS)])
    yield Catalog(url=empty_catalog.url, engine=engine, sessions=sessionmaker(engine, expire_on_commit=False),
                  version_engine=empty_catalog.version_engine)
    engine.dispose()


@pytest.fixture
def server(small_pool: Catalog) -> Iterator[tuple[str, Any]]:
    import uvicorn

    from kernelindex.web.app import create_app

    app = create_app(small_pool)
    app.state.export_files = ExportFiles(max_streams=CAP, send_timeout_s=3.0)
    port = free_port()
    served = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=served.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not served.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", app
    served.should_exit = True
    thread.join(timeout=10)
    app.state.export_files.close()


def _stalled_reader(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(b"GET /api/v1/export HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    return sock


def _status(sock: socket.socket) -> int:
    sock.settimeout(10)
    head = sock.recv(64)
    return int(head.split(b" ", 2)[1])


def test_stalled_export_readers_starve_nothing(server: tuple[str, Any], small_pool: Catalog) -> None:
    base, app = server
    port = int(base.rsplit(":", 1)[1])
    with httpx.Client(base_url=base, timeout=10) as client:
        assert client.get("/api/v1/export").status_code == 200  # the file is written once
        readers = [_stalled_reader(port) for _ in range(READERS)]
        try:
            statuses = sorted(_status(s) for s in readers)
            assert statuses == [200] * CAP + [503] * (READERS - CAP), statuses
            time.sleep(0.5)  # the downloads fill every buffer and stall
            assert app.state.export_files.open_streams == CAP
            assert small_pool.engine.pool.checkedout() == 0  # a stalled download holds no connection
            times = []
            for i in range(40):
                started = time.perf_counter()
                path = ("/api/v1/requests", "/challenges", "/api/v1/changes")[i % 3]
                assert client.get(path).status_code == 200, path
                times.append(time.perf_counter() - started)
            times.sort()
            assert times[int(len(times) * 0.99) - 1] < 1.0, times[-5:]
            busy = client.get("/api/v1/export")
            assert busy.status_code == 503 and busy.headers["retry-after"] == "10"
            assert busy.json()["code"] == "export_busy"
            deadline = time.monotonic() + 10  # the stalled downloads are cut after the 3 s send timeout
            while app.state.export_files.open_streams and time.monotonic() < deadline:
                time.sleep(0.1)
            assert app.state.export_files.open_streams == 0
        finally:
            for sock in readers:
                sock.close()
        started = time.perf_counter()
        whole = client.get("/api/v1/export")
        assert whole.status_code == 200 and time.perf_counter() - started < 5
        assert int(whole.headers["content-length"]) == len(whole.content) > ROWS * ROW_BYTES
        assert whole.headers["x-kernelindex-catalog-version"] == str(small_pool.version())
