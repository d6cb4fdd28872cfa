"""Who is writing: the API key on a request (``Authorization: Bearer ki_…``), its scope, and the
audit line every write leaves. Read routes need no key."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fastapi import Depends, Request
from fastapi.security import HTTPBearer

from kernelindex.catalog import audit
from kernelindex.trust.api_keys import ApiKey, ApiKeyError, authenticate
from kernelindex.web.api.failed_auth import FailedAuthLog, Who
from kernelindex.web.api.problems import ApiProblem


@dataclass(frozen=True)
class Writer:
    key: ApiKey
    scope: str
    client: str | None

    def record(self, request: Request, action: str, outcome: str, object_digest: str | None = None,
               detail: dict[str, Any] | None = None) -> None:
        if outcome.startswith("refused"):  # aggregated per key, action, outcome and minute (failed_auth.py)
            who = Who(self.key.name, action, outcome, self.client or "unknown", self.key.key_id, self.scope)
            failed_auth_log(request).refused(request.app.state.catalog, who, datetime.now(UTC), detail)
            return
        audit.record(request.app.state.catalog, actor=self.key.name, api_key=self.key.key_id, scope=self.scope,
                     action=action, outcome=outcome, object_digest=object_digest, client=self.client, detail=detail)


def client_address(request: Request) -> str | None:
    return request.client.host if request.client else None


def failed_auth_log(request: Request) -> FailedAuthLog:
    """This app's aggregate of failed authentications (made on first use)."""
    state = request.app.state
    if getattr(state, "failed_auth", None) is None:
        state.failed_auth = FailedAuthLog()
    log: FailedAuthLog = state.failed_auth
    return log


def require_scope(request: Request, scope: str, action: str) -> Writer:
    """The writer behind this request, when its key holds ``scope``; else a 401/403 problem (audited)."""
    header = request.headers.get("authorization", "")
    token = header[7:].strip() if header[:7].lower() == "bearer " else ""
    catalog = request.app.state.catalog
    if not token:
        raise ApiProblem("unauthorized", f"This route needs an API key with scope {scope}: send "
                         "`Authorization: Bearer ki_…` (an operator makes one with `ki keys create`).")
    try:
        key = authenticate(catalog, token)
    except ApiKeyError as exc:
        failed_auth_log(request).failed(catalog, client_address(request), f"{action}: {exc}", datetime.now(UTC))
        raise ApiProblem("unauthorized", f"{exc}.") from None
    writer = Writer(key, scope, client_address(request))
    if not key.allows(scope):
        writer.record(request, action, "refused: insufficient scope", detail={"key_scope": key.scope})
        raise ApiProblem("insufficient_scope", f"The API key {key.key_id} ({key.name}) has scope {key.scope}; this "
                         f"route needs {scope} (or admin).")
    return writer


# Declares the bearer scheme in the OpenAPI document; require_scope does the checking (and answers
# with problem+json rather than FastAPI's default 403).
BEARER_DEPENDENCY = [Depends(HTTPBearer(auto_error=False, scheme_name="apiKey",
                                        description="An API key made with `ki keys create` (ki_<id>_<secret>)."))]


def scoped(scope: str, action: str) -> Callable[[Any], Any]:
    """Mark an endpoint as a write needing ``scope``: the route class checks the key before it reads or
    validates the body (so a missing key is a 401 whatever the body), and the endpoint gets the writer
    through ``writer()``."""

    def mark(endpoint: Any) -> Any:
        endpoint.authorize = lambda request: require_scope(request, scope, action)
        return endpoint

    return mark


def writer_of(request: Request) -> Writer:
    """The writer the route class authorised (see ``scoped``)."""
    writer: Writer = request.state.writer
    return writer


WRITER = Depends(writer_of)
