"""The site's write for everyone: "Ask for this measurement", a plain HTML form.

``GET /requests/new?operation=…&workload=…&gpu=…`` shows what would be asked (never cached) with a
CSRF token: a random value set in a ``SameSite=Strict`` cookie that the form must echo back
(double submit), and the POST must come from this origin when the browser says where it came from.
``POST /requests`` files the request anonymously (audited with the client address), at most
``ASKS_PER_WINDOW`` per client per ``WINDOW_SECONDS``, counted in the audit log that every server process
shares (two asks racing in the same instant from one address may both pass).
"""

from __future__ import annotations

import hmac
import math
import secrets
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson
from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from kernelindex.catalog import audit
from kernelindex.catalog.audit import ANONYMOUS
from kernelindex.readmodel.cache import READ_CACHE
from kernelindex.services import writes
from kernelindex.services.problems import Problem
from kernelindex.web.api.auth import client_address
from kernelindex.web.api.problems import BodyRule, accepts_body
from kernelindex.web.render import ErrorPage, PageError, render

router = APIRouter(include_in_schema=False)
CSRF_COOKIE = "ki_csrf"
ASKS_PER_WINDOW = 5
WINDOW_SECONDS = 600.0
MAX_FORM_BYTES = 4096
MAX_FORM_FIELDS = 20


def bad_request(detail: str, problems: list[dict[str, str]] | None = None) -> PageError:
    return PageError(ErrorPage(400, "Bad request", detail, problems=problems or []))


def seconds_until_next_ask(request: Request, client: str, now: datetime) -> float:
    """0 when ``client`` may ask now, else the seconds until it may (a sliding window over the audit log)."""
    asked = audit.accepted_since(request.app.state.catalog, actor=ANONYMOUS, action="request.create",
                                 client=client, since=now - timedelta(seconds=WINDOW_SECONDS))
    if len(asked) < ASKS_PER_WINDOW:
        return 0.0
    frees_up = asked[len(asked) - ASKS_PER_WINDOW] + timedelta(seconds=WINDOW_SECONDS)
    return max((frees_up - now).total_seconds(), 1.0)


def _in_words(seconds: float) -> str:
    if seconds < 90:
        return f"{math.ceil(seconds)} seconds"
    return f"{math.ceil(seconds / 60)} minutes"


@router.get("/requests/new", response_class=HTMLResponse)
def ask_form(request: Request, operation: str = "", workload: str = "", gpu: str = "") -> Response:
    from kernelindex.readmodel.requests import ask_page
    from kernelindex.web.pages import page_errors

    with page_errors(request):
        page = ask_page(request.app.state.catalog, operation, workload, gpu, now=request.app.state.clock())
    token = secrets.token_urlsafe(32)
    response = render("request_new.html", page=page.to_json(), csrf=token, nav="challenges")
    response.headers["cache-control"] = "no-store"  # it carries a per-visitor token
    response.set_cookie(CSRF_COOKIE, token, max_age=3600, path="/requests", httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")
    return response


@router.post("/requests", response_class=HTMLResponse)
@accepts_body(BodyRule(MAX_FORM_BYTES, ("application/x-www-form-urlencoded",)))
async def ask_submit(request: Request) -> Response:
    raw = await request.body()
    if len(raw) > MAX_FORM_BYTES:
        raise bad_request(f"The form is at most {MAX_FORM_BYTES} bytes.")
    try:
        form = {k: v[0] for k, v in parse_qs(raw.decode("utf-8", "replace"), max_num_fields=MAX_FORM_FIELDS).items()}
    except ValueError:  # parse_qs refuses more fields than its maximum
        raise bad_request(f"The form has more than {MAX_FORM_FIELDS} fields; use the form on this site.") from None
    _check_csrf(request, form.get("csrf", ""))
    client = client_address(request) or "unknown"
    now = request.app.state.clock()
    wait = seconds_until_next_ask(request, client, now)
    if wait:
        audit.record(request.app.state.catalog, actor=ANONYMOUS, action="request.create", client=client,
                     outcome="refused: rate_limited", at=now)
        response = render("error.html", status_code=429, error=ErrorPage(
            429, "Too many requests", f"This address asked {ASKS_PER_WINDOW} times in the last "
            f"{WINDOW_SECONDS / 60:.0f} minutes; try again in {_in_words(wait)}."))
        response.headers["retry-after"] = str(math.ceil(wait))
        return response
    asked = writes.ask(request.app.state.catalog, now, _request_body(request, form))
    if isinstance(asked, Problem):  # the form offers only what the catalog holds: a 400, the form is at fault
        raise bad_request(asked.detail, [{"parameter": e["field"], "message": e["message"]} for e in asked.errors])
    audit.record(request.app.state.catalog, actor=ANONYMOUS, action="request.create", client=client,
                 outcome="merged" if asked.merged else "created", object_digest=asked.request["digest"],
                 detail={"request": asked.request["id"], "via": "site form"}, at=now)
    return RedirectResponse(f"/challenges?asked={asked.request['id']}#requests", status_code=303)


def _check_csrf(request: Request, token: str) -> None:
    cookie = request.cookies.get(CSRF_COOKIE, "")
    if not (cookie and token and hmac.compare_digest(cookie, token)):
        raise PageError(ErrorPage(403, "Form expired", "The form's security token is missing or does not match "
                                  "(cookies off, or the form is older than an hour). Open the form again and resend."))
    origin = request.headers.get("origin") or request.headers.get("referer")
    if origin and urlsplit(origin).netloc != request.url.netloc:
        raise PageError(ErrorPage(403, "Cross-site form", "The form was sent from another site; use the form on "
                                  "this site."))


def _request_body(request: Request, form: dict[str, str]) -> dict[str, Any]:
    from kernelindex.readmodel.requests import ask_page
    from kernelindex.web.pages import page_errors

    with page_errors(request):
        page = ask_page(request.app.state.catalog, form.get("operation", ""), form.get("workload", ""),
                        form.get("gpu", ""), now=request.app.state.clock())
    replicas = 2 if form.get("replicas") == "2" else 1
    return {"operation": page.operation, "axes": page.axes, "dtypes": page.dtypes, "gpu": page.gpu,
            "replicas": replicas}


@router.get("/feed.atom")
def feed(request: Request) -> Response:
    """The latest changes (publications, record events, retractions, request completions) as Atom."""
    from datetime import UTC, datetime

    from kernelindex.readmodel.changes import FEED_SIZE, latest_changes

    changes = latest_changes(request.app.state.catalog, FEED_SIZE, now=request.app.state.clock())
    updated = max((c.at for c in changes), default=datetime(2024, 1, 1, tzinfo=UTC)).isoformat()
    base = configured_base_url(request)  # never the Host header: the answer is cached and shared
    from kernelindex.web.render import environment

    body = environment().get_template("feed.atom.xml").render(changes=changes, updated=updated, base=base,
                                                              feed_id=f"{base}/feed.atom" if base else FEED_TAG)
    return Response(body, media_type="application/atom+xml; charset=utf-8")


FEED_TAG = "tag:kernelindex,2026:feed"


def configured_base_url(request: Request) -> str:
    """The site's public base URL (``app.state.base_url`` or $KERNELINDEX_BASE_URL, e.g.
    ``https://kernelindex.example``), or "" when none is configured: links are then relative."""
    import os

    base = getattr(request.app.state, "base_url", None) or os.environ.get("KERNELINDEX_BASE_URL") or ""
    return str(base).rstrip("/")


_CHALLENGES_KEY = ("html", "challenges+requests")


def challenges_key(page: int) -> tuple[str, str, int]:
    """The rendered-body slot of one page of /challenges (only pages that exist get one: a build that
    refuses its page is not kept)."""
    return (*_CHALLENGES_KEY, page)


@router.get("/challenges", response_class=HTMLResponse)
def challenges_with_requests(request: Request) -> Response:
    """/challenges: one page of the challenges view (cached per catalog version) plus the measurement
    requests, read live: requests are not catalog data and do not move the catalog version, and their
    ages tick."""
    from kernelindex.readmodel.requests import requests_listing
    from kernelindex.views.table import VIEW
    from kernelindex.web.pages import canonical_link, catalog_of, now_of, page_errors, query_of

    view, now, catalog = VIEW["challenges"], now_of(request), catalog_of(request)
    kept = {k: v for k, v in query_of(request).items() if k in ("page", "asked")}
    with page_errors(request):
        args = view.arguments(None, view.known(kept))
    asked = request.query_params.get("asked", "")
    asked_id = int(asked) if asked.isdigit() and len(asked) < 10 else None
    listing = requests_listing(catalog, now)
    number = int(args["page"] or 1)
    json_url = view.api_path + (f"?page={number}" if number > 1 else "")  # one body per page, whatever else is asked

    def build() -> bytes:
        with page_errors(request):  # a page past the last is refused here, and nothing is kept
            data = view.data(catalog, now, args)
        return bytes(render(view.template, page=data, nav="challenges", json_url=json_url,
                            requests=listing, asked=asked_id).body)

    # One page took ~60 ms to render when it was the whole ~1 MB list. Each page's rendered body is kept
    # with the catalog version in its own slot (one per page that exists: the page number is checked before
    # and the build refuses a page past the last), with what it was rendered for (day, `asked`, the live
    # request listing with its ticking ages): a new, claimed or finished request shows at once, and ages
    # and arbitrary `asked` values never add slots.
    key = challenges_key(number)
    rendered_for = (now.date().isoformat(), asked_id, orjson.dumps(listing, default=str))
    kept_for, body = READ_CACHE.get(catalog, key, lambda: (rendered_for, build()))
    if kept_for != rendered_for:
        READ_CACHE.discard(lambda k: k == key)
        kept_for, body = READ_CACHE.get(catalog, key, lambda: (rendered_for, build()))
    if kept_for != rendered_for:  # another request re-filled the slot for other arguments meanwhile
        body = build()
    return HTMLResponse(body, headers={"cache-control": "no-store", **canonical_link(request, kept)})
