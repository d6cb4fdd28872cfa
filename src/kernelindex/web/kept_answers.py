"""A finished answer as the answer cache keeps it (``KeptAnswer``: the stored answer's status, headers, body and
ETag, and the stamp it was computed at) and the ASGI plumbing that records one while passing it on
(``Recorder``), serves one again (``send_kept``, with ``If-None-Match``) and runs the app in the background
(``no_body``, ``discard``). ``web/answer_cache.py`` decides what is kept and when it is out of date."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from kernelindex.catalog.shared_answers import Stored
from kernelindex.web.security import Message, Receive, Scope, Send

MAX_KEPT_BYTES = 8 * 1024 * 1024  # one answer; bigger ones (none today) are answered but not kept
# (operation slug, its version, its GPUs' attainable bandwidths) or (SITE, catalog version, what it shows live)
Stamp = tuple[str, int, Hashable]
VERSION_HEADER = b"x-kernelindex-version"  # the version an answer shows: its operation's, or the catalog's
UPDATING_HEADER = b"x-kernelindex-updating"  # on an out-of-date answer: the version being computed
_MAIN = b'<main id="content" tabindex="-1">'


@dataclass(frozen=True)
class KeptAnswer(Stored):
    """A finished answer (what the shared store holds of it, ``Stored``) and the stamp it was computed at."""

    stamp: Stamp

    @property
    def nbytes(self) -> int:
        """What the cache counts against its byte budget."""
        return len(self.body)

    @cached_property
    def updating(self) -> KeptAnswer:
        """This answer as served while a newer one is computed: marked with the version it shows (the JSON
        gains ``"updating": {"shows_version": N}``, the page a line saying it is being updated) and its
        own ETag, so a client does not keep it as the newer answer."""
        body = self.body
        shown = self.stamp[1]
        if body.startswith(b"{") and _header(self.headers, b"content-type").startswith(b"application/json"):
            body = b'{"updating":{"shows_version":%d},' % shown + body[1:] if body != b"{}" else body
        elif _MAIN in body:
            note = (b'<p class="updating" role="status">Updating: this page shows the catalog as of version %d; '
                    b'a newer version is being computed. Reload in a few seconds.</p>' % shown)
            body = body.replace(_MAIN, _MAIN + note, 1)
        etag = self.etag[:-1] + b'-updating"'
        headers = tuple((k, str(len(body)).encode() if k == b"content-length" else etag if k == b"etag" else v)
                        for k, v in self.headers)
        return replace(self, headers=(*headers, (UPDATING_HEADER, b"1")), body=body, etag=etag)


def no_body() -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()  # nobody disconnects from a background computation
        return {"type": "http.disconnect"}

    return receive


async def discard(message: Message) -> None:
    return None


class Recorder:
    """Passes an answer through while keeping a copy, if it is one that may be kept."""

    def __init__(self, send: Send, complete: Callable[[Recorder], None] | None = None,
                 stamp: Stamp | None = None) -> None:
        self._send = send
        self._stamp = stamp  # the version the answer shows goes in its headers
        self._complete = complete  # called once the last body part is in, before it is sent on
        self._start: Message | None = None
        self._body: list[bytes] = []
        self._size = 0
        self._keepable = True

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            if self._stamp is not None and message["status"] == 200:
                message = {**message, "headers": [*message.get("headers", []),
                                                  (VERSION_HEADER, str(self._stamp[1]).encode())]}
            self._start = message
            self._keepable = message["status"] == 200 and not _forbids_keeping(message.get("headers", []))
        elif message["type"] == "http.response.body" and self._keepable:
            self._size += len(message.get("body", b""))
            self._keepable = self._size <= MAX_KEPT_BYTES
            self._body.append(message.get("body", b""))
        if message["type"] == "http.response.body" and not message.get("more_body") and self._complete:
            self._complete(self)
        await self._send(message)

    def answer(self, stamp: Stamp) -> KeptAnswer | None:
        if self._start is None or not self._keepable:
            return None
        body = b"".join(self._body)
        headers = [(k.lower(), v) for k, v in self._start.get("headers", [])]
        etag = next((v for k, v in headers if k == b"etag"), None)
        if etag is None:
            etag = b'W/"' + hashlib.sha256(body).hexdigest()[:20].encode() + b'"'
            headers.append((b"etag", etag))
        return KeptAnswer(200, tuple(headers), body, etag, stamp)


def _header(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> bytes:
    return next((v for k, v in headers if k == name), b"")


def _forbids_keeping(headers: Any) -> bool:
    for name, value in headers:
        name = name.lower()
        if name == b"set-cookie" or (name == b"cache-control" and b"no-store" in value):
            return True
    return False


async def send_kept(kept: KeptAnswer, scope: Scope, send: Send) -> None:
    if kept.etag in _if_none_match(scope):
        await send({"type": "http.response.start", "status": 304, "headers": [(b"etag", kept.etag)]})
        await send({"type": "http.response.body", "body": b""})
        return
    await send({"type": "http.response.start", "status": kept.status, "headers": list(kept.headers)})
    await send({"type": "http.response.body", "body": kept.body})


def _if_none_match(scope: Scope) -> set[bytes]:
    for name, value in scope.get("headers", []):
        if name == b"if-none-match":
            return {tag.strip() for tag in value.split(b",") if tag.strip()}
    return set()
