"""The Jinja2 environment, formatting filters, and page/error responses."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, Undefined, select_autoescape
from markupsafe import Markup
from starlette.responses import HTMLResponse

from kernelindex import urls
from kernelindex.domain.units import format_bytes, format_duration, format_ratio

STATIC_PACKAGE = "kernelindex.web"


@cache
def static_digest(name: str) -> str:
    data = resources.files(STATIC_PACKAGE).joinpath("static", name).read_bytes()
    return hashlib.sha256(data).hexdigest()[:10]


def static_url(name: str) -> str:
    """Content-addressed URL, so static assets can be cached as immutable."""
    return f"{urls.STATIC}/{name}?v={static_digest(name)}"


def digest_label(digest: str | None, digits: int = 12) -> str:
    """A digest as a page shows it: "sha256 0123456789ab…" (the keys in URLs use domain.canonical.short_digest)."""
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


def age(seconds: float | None) -> str:
    """How long ago, coarsely: '40 s', '12 min', '5 h', '3 days'."""
    if seconds is None:
        return "—"
    for size, unit in ((86_400, " days"), (3_600, " h"), (60, " min")):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f} s"


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
    from kernelindex.readmodel.kernel_names import short_title
    from kernelindex.readmodel.rows import METHOD_WORDS

    env.filters.update(
        duration=format_duration,
        ratio=multiple,
        bytes=format_bytes,
        digest=digest_label,
        date=date_only,
        number=number,
        markup=Markup,
        age=age,
        timing_method=lambda method: METHOD_WORDS.get(method, method),  # never the raw field value
        short_title=short_title,  # a generated kernel name read by people; the full one stays in JSON
    )
    from kernelindex.policy.floor_names import FLOOR_NAMES
    from kernelindex.readmodel.pages_home import family_anchor
    from kernelindex.web.charts import implementation_colour

    env.globals.update(static_url=static_url, query_url=query_url, urls=urls, data_sources=_published_sources(),
                       floor_names=FLOOR_NAMES, family_anchor=family_anchor,
                       implementation_colour=implementation_colour)
    env.globals["m"] = env.get_template("partials/macros.html").module  # the shared macros, in every template
    return env


def _published_sources() -> list[Any]:
    """Every source whose data the site may show (the source policy), for the footer's attribution."""
    from kernelindex import registry

    return [p for p in registry.source_policies().values() if not p.refused and p.kind != "runner"]


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


def error_response(page: ErrorPage) -> HTMLResponse:
    return render("error.html", status_code=page.status, error=page)
