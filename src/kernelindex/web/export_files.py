"""``GET /api/v1/export`` served from a file written once per catalog version.

Streaming the export straight from the database held one pooled connection (and one worker thread)
per download for as long as the client took to read it: 40 clients that asked and stopped reading
held every pooled connection, and each download cost ~26 s of CPU. Here the export is written once
per catalog version from one read snapshot (``readmodel.objects.write_export_snapshot``) into a file
of this worker's scratch directory, then every download reads that file: a stalled reader holds an
open file and a slot, never a database connection nor a thread.

Bounds (docs/reliability.md, "Streams and slow clients"):

- at most ``max_streams`` downloads at once per worker (``KERNELINDEX_EXPORT_STREAMS``, 8): past it a
  503 ``export_busy`` with ``Retry-After``, answered at once;
- a download whose client takes more than ``send_timeout_s`` (``KERNELINDEX_EXPORT_SEND_TIMEOUT``,
  30 s) to take the next 64 KiB is cut, and its slot freed;
- one writer at a time per worker; the others wait for it without a thread or connection, and the
  file of an older version is removed once a newer one is written (open downloads keep reading it).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import anyio
from starlette.responses import Response

from kernelindex.readmodel.objects import write_export_snapshot
from kernelindex.services.problems import Problem

CHUNK = 64 * 1024
DEFAULT_STREAMS = 8
DEFAULT_SEND_TIMEOUT_S = 30.0
FILENAME = "kernelindex-export.jsonl"


def _setting(name: str, default: float, low: float, high: float) -> float:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SystemExit(f"{name}={raw!r} is not a number; use one in [{low:g}, {high:g}]") from None
    if not low <= value <= high:
        raise SystemExit(f"{name}={raw!r} is out of range; use one in [{low:g}, {high:g}]")
    return value


class ExportBusy(Exception):
    """Every download slot of this worker is taken."""

    def problem(self) -> Problem:
        return Problem("export_busy", "Every export download slot of this server is in use; try again in "
                       f"{EXPORTS_RETRY_S} seconds.", headers={"retry-after": str(EXPORTS_RETRY_S)})


EXPORTS_RETRY_S = 10


class _Cut(Exception):
    """The client took longer than the send timeout to take the next piece."""


@dataclass
class ExportFiles:
    """This worker's export files and download slots."""

    max_streams: int = field(default_factory=lambda: int(_setting("KERNELINDEX_EXPORT_STREAMS", DEFAULT_STREAMS,
                                                                  1, 10_000)))
    send_timeout_s: float = field(default_factory=lambda: _setting("KERNELINDEX_EXPORT_SEND_TIMEOUT",
                                                                   DEFAULT_SEND_TIMEOUT_S, 0.01, 86_400))
    open_streams: int = 0
    _directory: Path | None = None
    _current: tuple[int, Path] | None = None
    _writing: asyncio.Lock | None = None

    def take_slot(self) -> None:
        if self.open_streams >= self.max_streams:
            raise ExportBusy
        self.open_streams += 1

    def give_slot(self) -> None:
        self.open_streams -= 1

    async def file_for(self, catalog: Any) -> tuple[int, Path]:
        """The export file of the catalog's current version, written first when this worker has none."""
        version = await anyio.to_thread.run_sync(catalog.version)
        if self._writing is None:
            self._writing = asyncio.Lock()
        async with self._writing:
            if self._current is None or self._current[0] < version:
                self._current = await anyio.to_thread.run_sync(self._write, catalog)
            return self._current

    def _write(self, catalog: Any) -> tuple[int, Path]:
        if self._directory is None:
            self._directory = Path(tempfile.mkdtemp(prefix="kernelindex-export-"))
        scratch = self._directory / "writing.jsonl"
        with scratch.open("w", encoding="utf-8") as handle:
            version = write_export_snapshot(catalog, handle)
        path = self._directory / f"export-{version}.jsonl"
        scratch.replace(path)
        for old in self._directory.glob("export-*.jsonl"):  # an open download keeps reading its unlinked file
            if old != path:
                old.unlink(missing_ok=True)
        return version, path

    def close(self) -> None:
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)


async def send_file(version: int, path: Path, files: ExportFiles, scope: Any, receive: Any, send: Any) -> None:
    """Answer with the file (its size announced in ``Content-Length``), cutting a client that stalls;
    the caller's slot is given back however the download ends."""
    handle: IO[bytes] = path.open("rb")
    try:
        size = os.fstat(handle.fileno()).st_size
        headers = [(b"content-type", b"application/jsonl"), (b"content-length", str(size).encode()),
                   (b"content-disposition", f'attachment; filename="{FILENAME}"'.encode()),
                   (b"etag", f'"export-{version}"'.encode()), (b"x-kernelindex-catalog-version", str(version).encode())]
        await _timed(send({"type": "http.response.start", "status": 200, "headers": headers}), files)
        while piece := await anyio.to_thread.run_sync(handle.read, CHUNK):
            await _timed(send({"type": "http.response.body", "body": piece, "more_body": True}), files)
        await _timed(send({"type": "http.response.body", "body": b""}), files)
    except _Cut:
        return  # the server closes the connection: the response was not completed
    finally:
        handle.close()
        files.give_slot()


async def _timed(sending: Any, files: ExportFiles) -> None:
    try:
        await asyncio.wait_for(sending, files.send_timeout_s)
    except TimeoutError:
        raise _Cut from None
    except OSError:  # the client went away
        raise _Cut from None


class ExportResponse(Response):
    """The ASGI answer of one download: the export file of ``version``, holding a slot until it ends."""

    def __init__(self, version: int, path: Path, files: ExportFiles) -> None:
        super().__init__(media_type="application/jsonl")
        self.version, self.path, self.files = version, path, files

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await send_file(self.version, self.path, self.files, scope, receive, send)
