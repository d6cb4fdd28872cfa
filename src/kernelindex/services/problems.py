"""The one Problem: what a question or command refuses, in the words every front door shows.

The API answers it as an RFC 9457 problem+json body, a page as its error page, the CLI as a one-line
message with an exit code, MCP as a tool error carrying the same body. The read model, the resolver
and the write checks raise their own exceptions where they find the fault; this module is where
each of them becomes a Problem.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from kernelindex.readmodel.errors import BadParameter, BadSelection, CohortMoved, NotFound

PROBLEM_BASE = "https://kernelindex.dev/problems/"

TITLES = {
    "bad_request": "Bad request",
    "bad_cursor": "Bad cursor",
    "unknown_parameter": "Unknown parameter",
    "query_too_long": "Query string too long",
    "not_found": "Not found",
    "payload_too_large": "Request body too large",
    "unsupported_media_type": "Unsupported media type",
    "invalid_json": "Body is not valid JSON",
    "invalid_request": "Request does not validate",
    "bad_selection": "Bad selection",
    "cohort_moved": "Cohort key changed",
    "method_not_allowed": "Method not allowed",
    "unauthorized": "API key missing or not valid",
    "insufficient_scope": "API key lacks the scope",
    "archive_invalid": "Archive refused",
    "bundle_invalid": "Bundle does not verify",
    "untrusted_runner": "Runner key not trusted",
    "not_a_measurement": "Bundle carries more than a measurement",
    "unpublishable": "Bundle cannot be published",
    "lease_lost": "Lease lost",
    "claim_not_proven": "Claim not signed by the runner",
    "not_fulfilled": "Bundle does not fulfil the request",
    "rate_limited": "Too many requests",
    "internal_error": "Internal server error",
    "unavailable": "Service unavailable",
    "export_busy": "Every export download slot is in use",
    "uploads_busy": "Every upload slot is in use",
    "request_timeout": "Request body stalled",
    "implementation_redeclared": "Bundle redeclares a catalogued implementation",
    "duplicate_external_id": "A run of the bundle reuses a stored run's external id",
}
STATUS = {
    "bad_request": 400, "bad_cursor": 400, "unknown_parameter": 400, "query_too_long": 400, "invalid_json": 400,
    "bad_selection": 400, "cohort_moved": 400,
    "unauthorized": 401, "insufficient_scope": 403, "claim_not_proven": 403, "not_found": 404,
    "method_not_allowed": 405, "lease_lost": 409, "payload_too_large": 413, "unsupported_media_type": 415,
    "invalid_request": 422, "archive_invalid": 422, "bundle_invalid": 422, "untrusted_runner": 422,
    "not_a_measurement": 422, "unpublishable": 422, "not_fulfilled": 422, "rate_limited": 429,
    "internal_error": 500, "unavailable": 503, "export_busy": 503, "implementation_redeclared": 422,
    "uploads_busy": 503, "request_timeout": 408, "duplicate_external_id": 409,
}
# An HTTP status the framework raises on its own, as the problem it is.
CODE_OF_STATUS = {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 413: "payload_too_large",
                  415: "unsupported_media_type", 422: "invalid_request", 429: "rate_limited", 500: "internal_error",
                  503: "unavailable"}


@dataclass(frozen=True)
class Problem:
    """Why a question or command got no answer.

    ``code`` is stable (it names the problem's ``type`` URL, title and HTTP status); ``detail`` says
    what was wrong, where, and what to do; ``errors`` point at the fields at fault (``field``, ``in``,
    ``message``, sometimes ``suggestion``); ``headers`` go with an HTTP answer (``retry-after``);
    ``malformed``: a name that cannot name anything (a 404 on the web, a usage error for the CLI)."""

    code: str
    detail: str
    errors: tuple[Mapping[str, Any], ...] = ()
    headers: Mapping[str, str] = field(default_factory=dict)
    malformed: bool = False

    def __post_init__(self) -> None:
        if self.code not in STATUS:
            raise ValueError(f"unknown problem code {self.code!r}; declare it in TITLES and STATUS")

    @property
    def status(self) -> int:
        return STATUS[self.code]

    @property
    def title(self) -> str:
        return TITLES[self.code]

    @property
    def param(self) -> str | None:
        """The parameter at fault, when one is."""
        return str(self.errors[0]["field"]) if self.errors and self.errors[0].get("field") else None

    @property
    def exit_code(self) -> int:
        """The CLI's exit code: 1 when nothing was found (or the server failed), 2 for a usage error."""
        return 1 if (self.status == 404 and not self.malformed) or self.status >= 500 else 2

    def body(self, instance: str | None = None) -> dict[str, Any]:
        """The problem+json body (also what a batch slot and an MCP tool error carry)."""
        body: dict[str, Any] = {"type": PROBLEM_BASE + self.code, "title": self.title, "status": self.status,
                                "detail": self.detail, "code": self.code}
        if instance:
            body["instance"] = instance
        if self.errors:
            body["errors"] = [dict(e) for e in self.errors]
        return body


def field_errors(errors: Sequence[Mapping[str, Any]], where: str | None = None) -> tuple[Mapping[str, Any], ...]:
    """Field errors, each said to be ``in`` ``where`` (query, body) when given."""
    return tuple({**e, "in": where} if where else dict(e) for e in errors)


READ_ERRORS = (NotFound, BadSelection, BadParameter)


def read_refusal(exc: NotFound | BadSelection | BadParameter) -> Problem:
    """What a read refuses (the read model's and the page table's three exceptions), as a Problem."""
    if isinstance(exc, NotFound):
        return Problem("not_found", _sentence(str(exc)), malformed=exc.malformed)
    if isinstance(exc, CohortMoved):  # the web redirects (301); other doors say the key to use
        return Problem("cohort_moved", f"Cohort {exc.former!r} is keyed {exc.key!r} now (cohort keys changed "
                       f"when environments stopped counting measured values and implementation packages); ask "
                       f"for cohort {exc.key!r}.", ({"field": "cohort", "in": "query", "message": str(exc),
                                                     "suggestion": exc.key},))
    if isinstance(exc, BadSelection):
        return Problem("bad_selection", str(exc), ({"field": "workload/cohort", "in": "query", "message": str(exc)},))
    return Problem("bad_request", f"The value of {exc.parameter!r} cannot be used: {exc.message}.",
                   ({"field": exc.parameter, "in": "query", "message": exc.message},))


def _sentence(text: str) -> str:
    text = text[:300]
    return text if text.endswith(".") else text + "."


Answer: TypeAlias = dict[str, Any]  # a JSON answer, as the API serves it
