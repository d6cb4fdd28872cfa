"""The site's write for everyone: "Ask for this measurement", a plain HTML form.

``GET /requests/new?operation=…&workload=…&gpu=…`` shows what would be asked (never cached) with a
CSRF token: a random value set in a ``SameSite=Strict`` cookie that the form must echo back
(double submit), and the POST must come from this origin when the browser says where it came from.
``POST /requests`` files the request anonymously through ``services.writes.ask_on_site`` (audited with
the client address, at most ``SITE_ASKS`` per client per ``SITE_WINDOW``, counted in the audit log that every
server process shares: two asks racing in the same instant from one address may both pass).
"""

from __future__ import annotations

import hmac
import secrets
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from kernelindex import urls
from kernelindex.catalog import audit
from kernelindex.catalog.audit import ANONYMOUS
from kernelindex.services import reads, writes
from kernelindex.services.audit import Audit
from kernelindex.services.problems import Problem
from kernelindex.web.api.auth import client_address, failed_auth_log
from kernelindex.web.api.failed_auth import Who
from kernelindex.web.api.problems import BodyRule, accepts_body
from kernelindex.web.render import ErrorPage, PageError, render

router = APIRouter(include_in_schema=False)
CSRF_COOKIE = "ki_csrf"
MAX_FORM_BYTES = 4096
MAX_FORM_FIELDS = 20


def bad_request(detail: str, problems: list[dict[str, str]] | None = None) -> PageError:
    return PageError(ErrorPage(400, "Bad request", detail, problems=problems or []))


@router.get(urls.ASK_FORM, response_class=HTMLResponse)
def ask_form(request: Request, operation: str = "", workload: str = "", gpu: str = "", axes: str = "",
             dtypes: str = "") -> Response:
    from kernelindex.web.pages import problem_page

    page = reads.ask_form(request.app.state.catalog, request.app.state.clock(),
                           {"operation": operation, "workload": workload, "gpu": gpu, "axes": axes, "dtypes": dtypes})
    if isinstance(page, Problem):
        problem_page(request, page)
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
    asked = writes.ask_on_site(request.app.state.catalog, now, form, client=client,
                               audit=_anonymous(request, client, now))
    if isinstance(asked, Problem):
        return _refused(request, asked)
    return RedirectResponse(urls.challenges("requests", ("asked", asked.request["id"])), status_code=303)


def _refused(request: Request, problem: Problem) -> Response:
    from kernelindex.web.pages import problem_page

    if problem.code == "rate_limited":
        response = render("error.html", status_code=429, error=ErrorPage(429, problem.title, problem.detail))
        response.headers.update(problem.headers)
        return response
    if problem.code == "invalid_request":  # the form offers only what the catalog holds: a 400, the form is at fault
        raise bad_request(problem.detail, [{"parameter": e["field"], "message": e["message"]} for e in problem.errors])
    problem_page(request, problem)


def _anonymous(request: Request, client: str, now: datetime) -> Audit:
    """The site form's audit lines: anonymous, by client address; refusals counted per minute."""
    catalog = request.app.state.catalog

    def record(action: str, outcome: str, object_digest: str | None = None,
               detail: dict[str, Any] | None = None) -> None:
        if outcome.startswith("refused"):
            failed_auth_log(request).refused(catalog, Who(ANONYMOUS, action, outcome, client), now, detail)
        else:
            audit.record(catalog, actor=ANONYMOUS, action=action, client=client, outcome=outcome,
                         object_digest=object_digest, detail=detail, at=now)
    return record


def _check_csrf(request: Request, token: str) -> None:
    cookie = request.cookies.get(CSRF_COOKIE, "")
    if not (cookie and token and hmac.compare_digest(cookie, token)):
        raise PageError(ErrorPage(403, "Form expired", "The form's security token is missing or does not match "
                                  "(cookies off, or the form is older than an hour). Open the form again and resend."))
    origin = request.headers.get("origin") or request.headers.get("referer")
    if origin and urlsplit(origin).netloc != request.url.netloc:
        raise PageError(ErrorPage(403, "Cross-site form", "The form was sent from another site; use the form on "
                                  "this site."))
