"""The Jinja2 environment, formatting filters, page/error responses and the read-model cache."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, Undefined, select_autoescape
from markupsafe import Markup
from starlette.responses import HTMLResponse

from kernelindex.domain.units import format_bytes, format_duration, format_ratio

STATIC_PACKAGE = "kernelindex.web"


@cache
def static_digest(name: str) -> str:
    data = resources.files(STATIC_PACKAGE).joinpath("static", name).read_bytes()
    return hashlib.sha256(data).hexdigest()[:10]


def static_url(name: str) -> str:
    """Content-addressed URL, so static assets can be cached as immutable."""
    return f"/static/{name}?v={static_digest(name)}"


def short_digest(digest: str | None, digits: int = 12) -> str:
    if not digest:
        return "—"
    algo, _, hexpart = digest.partition(":")
    return f"{algo} {hexpart[:digits]}…" if hexpart else digest[:digits]


def date_only(value: str | datetime | None) -> str:
    if value is None:
        return "—"
    text = value.isoformat() if isinstance(value, datetime) else str(value)
    return text[:10]


def number(value: float | int | None) -> str:
    if value is None:
        return "—"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.2f}"


def query_url(path: str, **params: Any) -> str:
    """Build ``path?k=v`` skipping empty values; lists repeat the key."""
    pairs: list[tuple[str, str]] = []
    for key, value in params.items():
        if value is None or value == "":
            continue
        if isinstance(value, (list, tuple)):
            pairs.extend((key, str(v)) for v in value)
        else:
            pairs.append((key, str(value)))
    return f"{path}?{urlencode(pairs)}" if pairs else path


def multiple(value: float | None) -> str:
    return format_ratio(value)


@cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("kernelindex.web", "templates"),
        autoescape=select_autoescape(["html", "svg", "xml"]),
        undefined=Undefined,  # JSON omits absent fields: a missing key renders as nothing
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        duration=format_duration,
        ratio=multiple,
        bytes=format_bytes,
        digest=short_digest,
        date=date_only,
        number=number,
        markup=Markup,
    )
    env.globals.update(static_url=static_url, query_url=query_url)
    return env


BASE_CONTEXT: dict[str, Any] = {"json_url": None, "search_query": None, "nav": None}


def render(template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    html = environment().get_template(template).render(**{**BASE_CONTEXT, **context})
    return HTMLResponse(html, status_code=status_code)


@dataclass
class ErrorPage:
    status: int
    title: str
    detail: str
    problems: list[dict[str, str]] = field(default_factory=list)
    suggestions: list[dict[str, str]] = field(default_factory=list)


class PageError(Exception):
    """Raised by page handlers; rendered as a helpful HTML error page."""

    def __init__(self, page: ErrorPage) -> None:
        super().__init__(page.detail)
        self.page = page


def not_found(detail: str, suggestions: list[dict[str, str]] | None = None) -> PageError:
    return PageError(ErrorPage(404, "Not found", detail, suggestions=suggestions or []))


def bad_request(detail: str, problems: list[dict[str, str]] | None = None) -> PageError:
    return PageError(ErrorPage(400, "Bad request", detail, problems=problems or []))


def error_response(page: ErrorPage) -> HTMLResponse:
    return render("error.html", status_code=page.status, error=page)


class VersionedCache:
    """A small LRU of computed values keyed on (catalog version, key).

    Read models are pure functions of the catalog: when the version counter moves (any write),
    every old entry is unreachable and ages out. Concurrent requests for the same missing entry
    wait for the one computation in flight instead of repeating it.
    """

    def __init__(self, size: int = 512) -> None:
        self.size = size
        self._items: OrderedDict[tuple[int, Hashable], Any] = OrderedDict()
        self._inflight: dict[tuple[int, Hashable], threading.Event] = {}
        self._lock = threading.Lock()

    def _lookup(self, full: tuple[int, Hashable]) -> tuple[bool, Any]:
        if full in self._items:
            self._items.move_to_end(full)
            return True, self._items[full]
        return False, None

    def get_or_compute(self, version: int, key: Hashable, compute: Callable[[], Any]) -> Any:
        full = (version, key)
        with self._lock:
            found, value = self._lookup(full)
            if found:
                return value
            pending = self._inflight.get(full)
            if pending is None:
                self._inflight[full] = threading.Event()
        if pending is not None:
            pending.wait()
            with self._lock:
                found, value = self._lookup(full)
            return value if found else compute()  # the first computation failed: try ourselves
        try:
            value = compute()
            with self._lock:
                self._items[full] = value
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
            return value
        finally:
            with self._lock:
                self._inflight.pop(full).set()

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
