"""Whole answers of the catalog's pure reads, kept in the read model's cache.

Every page and JSON twin in ``CACHED_ROUTES`` is a function of the catalog version, the day and the
URL alone (their models are already cached on exactly that, ``views.table.View.cache_key``). Their
finished answers (status 200, headers, body) are kept per (catalog version, day, path, query), so a
repeated read costs one version query and a copy, not routing, parameter checks, a thread hop,
template rendering or JSON encoding (bench/RESULTS.md, "Load under concurrency").

An answer that sets a cookie or says ``no-store`` is never kept; ``/challenges`` is not listed (it
shows the live measurement requests, which change without a catalog version). A kept answer has an
ETag, so a client revalidating with ``If-None-Match`` gets a 304.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from kernelindex.readmodel.cache import READ_CACHE
from kernelindex.views.table import VIEWS
from kernelindex.web.security import ASGIApp, Message, Receive, Scope, Send

CACHED_ROUTES: frozenset[str] = frozenset(
    {path for view in VIEWS if view.name != "challenges" for path in (view.path, view.api_path)}
    | {"/gpus", "/api/v1/gpus", "/api/v1/operations", "/api/v1/operations/{slug}/workloads", "/api/v1/workloads",
       "/api/v1/implementations", "/docs", "/runs/{run_id}/samples.json"}
)
_CACHED_PATH = re.compile("|".join(re.sub(r"\{\w+\}", "[^/]+", path) for path in sorted(CACHED_ROUTES)))
MAX_KEPT_BYTES = 8 * 1024 * 1024  # one answer; bigger ones (none today) are answered but not kept


@dataclass(frozen=True)
class KeptAnswer:
    status: int
    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes
    etag: bytes

    @property
    def nbytes(self) -> int:
        """What the cache counts against its byte budget."""
        return len(self.body)


class AnswerCache:
    """ASGI middleware: answer a GET of a cached route from the read model's cache, or run the app and
    keep its answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "GET" or not _CACHED_PATH.fullmatch(scope["path"]):
            await self.app(scope, receive, send)
            return
        state = scope["app"].state
        # The version read is one indexed row over a kept connection (~0.1–0.2 ms): cheaper inline on
        # the event loop than a hop to the thread pool and back.
        catalog, version = state.catalog, state.catalog.version()
        key = ("answer", state.clock().date().isoformat(), scope["path"], scope.get("query_string", b""))
        kept = READ_CACHE.peek(catalog, key, version)
        if isinstance(kept, KeptAnswer):
            await _send_kept(kept, scope, send)
            return
        recorder = _Recorder(send)
        await self.app(scope, receive, recorder.send)
        route = scope.get("route")
        if getattr(route, "path", None) in CACHED_ROUTES and (answer := recorder.answer()) is not None:
            READ_CACHE.put(catalog, key, answer, version=version)


class _Recorder:
    """Passes an answer through while keeping a copy, if it is one that may be kept."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._start: Message | None = None
        self._body: list[bytes] = []
        self._size = 0
        self._keepable = True

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self._start = message
            self._keepable = message["status"] == 200 and not _forbids_keeping(message.get("headers", []))
        elif message["type"] == "http.response.body" and self._keepable:
            self._size += len(message.get("body", b""))
            self._keepable = self._size <= MAX_KEPT_BYTES
            self._body.append(message.get("body", b""))
        await self._send(message)

    def answer(self) -> KeptAnswer | None:
        if self._start is None or not self._keepable:
            return None
        body = b"".join(self._body)
        headers = [(k.lower(), v) for k, v in self._start.get("headers", [])]
        etag = next((v for k, v in headers if k == b"etag"), None)
        if etag is None:
            etag = b'W/"' + hashlib.sha256(body).hexdigest()[:20].encode() + b'"'
            headers.append((b"etag", etag))
        return KeptAnswer(200, tuple(headers), body, etag)


def _forbids_keeping(headers: Any) -> bool:
    for name, value in headers:
        name = name.lower()
        if name == b"set-cookie" or (name == b"cache-control" and b"no-store" in value):
            return True
    return False


async def _send_kept(kept: KeptAnswer, scope: Scope, send: Send) -> None:
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
