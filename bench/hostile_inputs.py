"""Hostile inputs of issue 23 (items 3, 4 and 10): how fast each is refused and what it costs in memory.

Prints, for each attack, the answer, the seconds to refuse it and the memory it cost: peak memory
traced by ``tracemalloc`` for what runs in this process, and the growth of this process's resident set
(VmHWM, the high-water mark) for the HTTP bodies sent to a real uvicorn server in this process.

    .venv/bin/python bench/hostile_inputs.py
"""

from __future__ import annotations

import io
import os
import socket
import tarfile
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import zstandard


def _high_water_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _outcome(action: Callable[[], Any]) -> str:
    try:
        action()
    except Exception as exc:  # noqa: BLE001 - the refusal is what is measured
        return f"{type(exc).__name__}: {str(exc)[:90]}"
    return "accepted"


def _traced(action: Callable[[], Any]) -> tuple[str, float, float]:
    """The outcome, its seconds (untraced: tracemalloc slows Python several times) and its traced peak."""
    started = time.perf_counter()
    outcome = _outcome(action)
    seconds = time.perf_counter() - started
    tracemalloc.start()
    _outcome(action)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return outcome, seconds, peak


def tar_bomb() -> None:
    from kernelindex.trust.uploads import unpack_bundle

    info = tarfile.TarInfo("././@LongLink")
    info.size, info.type = 2**30, tarfile.GNUTYPE_LONGNAME
    bomb = info.tobuf(tarfile.GNU_FORMAT) + b"a" * 1_040_000
    with tempfile.TemporaryDirectory() as scratch:
        outcome, seconds, peak = _traced(lambda: unpack_bundle(bomb, Path(scratch)))
    print(f"tar: {len(bomb):,}-byte upload declaring a 1 GiB long name: {seconds * 1000:.1f} ms, "
          f"{peak:.1f} MiB traced, error {len(outcome)} chars\n  {outcome}")


def _export(pieces: int, piece: bytes) -> bytes:
    out = io.BytesIO()
    with zstandard.ZstdCompressor(level=3).stream_writer(out, closefd=False) as writer:
        writer.write(b'{"table": "sources", "row": {"id": "s1", "slug": "x"}}\n')
        for _ in range(pieces):
            writer.write(piece)
    return out.getvalue()


def export_bombs() -> None:
    from kernelindex.sources.kernelindex_export.read import read_export

    for label, content in (("a 2 GiB line", _export(2048, b"a" * 2**20)),
                           ("64 Mi newlines", _export(64, b"\n" * 2**20))):
        outcome, seconds, peak = _traced(lambda content=content: read_export(content, "bomb.jsonl.zst"))
        print(f"export: {len(content):,}-byte .zst holding {label}: {seconds:.2f} s, {peak:.1f} MiB traced\n"
              f"  {outcome}")


def _serve() -> tuple[Any, int]:
    import uvicorn

    from kernelindex.catalog.db import open_catalog
    from kernelindex.web.app import create_app

    catalog = open_catalog(f"sqlite:///{tempfile.mkdtemp()}/bench.sqlite")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(catalog), host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return server, port


def _send(port: int, head: bytes, pieces: int, piece: bytes) -> tuple[str, int]:
    """Send the head and up to ``pieces`` pieces; the status line answered and the bytes sent."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(head)
        try:
            for _ in range(pieces):
                conn.sendall(piece)
                sent += len(piece)
        except OSError:
            pass  # the server answered and closed: the rest is never read
        try:
            answer = conn.recv(4096).split(b"\r\n", 1)[0].decode()
        except OSError as exc:
            answer = f"connection {type(exc).__name__}"
    return answer, sent


def bodies() -> None:
    server, port = _serve()
    chunk = b"a" * 2**20
    cases = [
        ("POST /requests, Content-Length 1 GiB", b"POST /requests HTTP/1.1\r\nHost: x\r\nContent-Type: "
         b"application/x-www-form-urlencoded\r\nContent-Length: 1073741824\r\n\r\n", 1024, chunk),
        ("POST /requests, 1 GiB chunked", b"POST /requests HTTP/1.1\r\nHost: x\r\nContent-Type: "
         b"application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n", 1024,
         b"100000\r\n" + chunk + b"\r\n"),
        ("POST /mcp, 1 GiB chunked", b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         b"Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n", 1024,
         b"100000\r\n" + chunk + b"\r\n"),
    ]
    for label, head, pieces, piece in cases:
        before = _high_water_mb()
        started = time.perf_counter()
        answer, sent = _send(port, head, pieces, piece)
        print(f"http: {label}: {answer!r} after {time.perf_counter() - started:.2f} s, {sent / 2**20:,.0f} MiB "
              f"accepted by the socket, resident high-water {before:.0f} -> {_high_water_mb():.0f} MB")
    server.should_exit = True


if __name__ == "__main__":
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    tar_bomb()
    export_bombs()
    bodies()
