"""The HTTP client of ``--api`` lookups (``ki search/show/records/compare/resolve/use --api URL``).

It is the standard library's (``urllib.request``), not httpx, the HTTP client the project uses
elsewhere (``ki publish``, the runner's worker). The reason is start-up time: a lookup against a
server has 0.5 s on our two shared cores (issue 22, ``bench/cli_start.py``), and importing httpx
alone took about 0.2 s of CPU of it, because its package imports its own command-line client (click,
rich's progress bars, pygments) whatever part of it one uses. A lookup needs a few GETs and one POST
of JSON to one server, one request at a time: no pooling, streaming, auth, HTTP/2 or async, which is
what httpx adds over ``urllib.request`` (about 0.04 s to import). Tests substitute an in-process
client with the same ``request`` and response attributes (``backends.http_client``)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from http.client import HTTPException
from typing import Any
from urllib.parse import urlencode

from kernelindex import __version__

TIMEOUT_S = 30.0


class Unreachable(Exception):
    """No answer came back: the server could not be reached, or the connection broke."""


@dataclass(frozen=True)
class Response:
    """The parts of an answer ``backends.HttpBackend`` reads (named as httpx names them)."""

    status_code: int
    reason_phrase: str
    content: bytes

    def json(self) -> Any:
        """The body as JSON; ValueError when it is not JSON."""
        return json.loads(self.content)


class LookupClient:
    """Requests to one server's API, ``base`` its root (``http://host:8000/api/v1``)."""

    def __init__(self, base: str, timeout_s: float = TIMEOUT_S) -> None:
        self.base = base
        self.timeout_s = timeout_s

    def request(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                json: Any = None) -> Response:  # noqa: A002 - httpx's name for the JSON body
        if not self.base.startswith(("http://", "https://")):
            raise Unreachable("--api takes an http:// or https:// URL")
        query = f"?{urlencode(params, doseq=True)}" if params else ""
        headers = {"Accept": "application/json", "User-Agent": f"ki/{__version__}"}
        data = None
        if json is not None:
            data = _dumps(json)
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(self.base + path + query, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
                return Response(answer.status, answer.reason, answer.read())
        except urllib.error.HTTPError as exc:  # an answer, with a 4xx/5xx status: the caller reads its problem
            with exc:
                return Response(exc.code, str(exc.reason), exc.read())
        except urllib.error.URLError as exc:
            raise Unreachable(str(exc.reason)) from None
        except (OSError, HTTPException) as exc:
            raise Unreachable(str(exc) or type(exc).__name__) from None


def _dumps(body: Any) -> bytes:
    return json.dumps(body, ensure_ascii=False).encode()
