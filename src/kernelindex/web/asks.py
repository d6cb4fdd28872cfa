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

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from kernelindex import urls
from kernelindex.catalog import audit
from kernelindex.catalog.audit import ANONYMOUS
from kernelindex.services import writes
from kernelindex.services.problems import Problem
from kernelindex.web.api.auth import client_address, failed_auth_log
from kernelindex.web.api.failed_auth import Who
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


@router.get(urls.ASK_FORM, response_class=HTMLResponse)
def ask_form(request: Request, operation: str = "", workload: str = "", gpu: str = "") -> Response:
    from kernelindex.readmodel.requests import ask_page
    from kernelindex.web.pages import page_errors

    with page_errors(request):
        page = ask_page(request.app.state.catalog, operation, workload, gpu, now=request.app.state.clock())
    token = secrets.token_urlsafe(32)
    response = render("request_new.html", page=page.to_json(), csrf=token, nav="challenges")
    response.headers["cache-control"] = "no-store"  # it carries a per-visitor token
    response.set_cookie(CSRF_COOKIE, token, max_age=3600, path=urls.ASKS, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")
    return response


@router.post(urls.ASKS, response_class=HTMLResponse)
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
        failed_auth_log(request).refused(request.app.state.catalog, Who(ANONYMOUS, "request.create",
                                                                        "refused: rate_limited", client), now)
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
    return RedirectResponse(urls.challenges("requests", ("asked", asked.request["id"])), status_code=303)


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
    asked = page.request
    return {"operation": asked.operation, "axes": asked.axes, "dtypes": asked.dtypes, "gpu": asked.gpu,
            "replicas": replicas}
