"""Pending bundle uploads are bounded in number and held on disk, not in memory.

An upload was read whole into memory (up to 32 MiB) before anything else, with no cap on how many:
40 clients holding uploads open cost the server 1.27 GB. Here, per worker:

- at most ``receiving`` uploads are read at once (``$KERNELINDEX_UPLOADS_AT_ONCE``, 32): past it a 503
  ``uploads_busy`` with ``Retry-After``, answered before a byte of the body is read;
- each body is spooled to a temporary file past ``SPOOL_IN_MEMORY`` (256 KiB), so a held upload costs
  at most that much memory, and the archive is unpacked from the file;
- at most ``verifying`` uploads are verified and published at once (2); the others wait without a
  thread or a database connection.

A client that stalls mid-body is cut by ``web/body_limits.py`` (408 after 20 s without a byte).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from dataclasses import dataclass, field

from fastapi import Request

from kernelindex.services.problems import Problem
from kernelindex.web.api.problems import ApiProblem

SPOOL_IN_MEMORY = 256 * 1024
DEFAULT_RECEIVING = 32
RETRY_S = 5


@dataclass
class UploadSlots:
    receiving: int = field(default_factory=lambda: int(os.environ.get("KERNELINDEX_UPLOADS_AT_ONCE")
                                                       or DEFAULT_RECEIVING))
    verifying: int = 2
    held: int = 0
    _verify: asyncio.Semaphore | None = None

    def take(self) -> None:
        if self.held >= self.receiving:
            raise ApiProblem(Problem("uploads_busy", f"{self.receiving} bundle uploads are being received by this "
                                     f"server process, its limit; try again in {RETRY_S} seconds.",
                                     # the body is never read: close rather than drain it
                                     headers={"retry-after": str(RETRY_S), "connection": "close"}))
        self.held += 1

    def give(self) -> None:
        self.held -= 1

    def verifier(self) -> asyncio.Semaphore:
        if self._verify is None:
            self._verify = asyncio.Semaphore(self.verifying)
        return self._verify


def slots_of(request: Request) -> UploadSlots:
    state = request.app.state
    if getattr(state, "upload_slots", None) is None:
        state.upload_slots = UploadSlots()
    slots: UploadSlots = state.upload_slots
    return slots


async def spooled_body(request: Request) -> tempfile.SpooledTemporaryFile[bytes]:
    """The request body in a temporary file (in memory up to SPOOL_IN_MEMORY), positioned at its start.
    Writing a chunk (at most 64 KiB from the server) blocks the loop for a page-cache copy only: cheaper
    than a thread hop per chunk."""
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115 - the caller closes it
    try:
        async for chunk in request.stream():
            spool.write(chunk)
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return spool
