"""The audit log as the services write and read it: the ``Audit`` a door hands a command (who is acting:
an API key, or the site form's anonymous client), the log's pages for admins, and the sliding windows that
limit how often one actor may file a request (counted in the log every server process shares)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

from kernelindex.catalog import audit
from kernelindex.catalog.db import Catalog
from kernelindex.services.problems import Answer


class Audit(Protocol):
    """Records one line of a command: the service says what happened, the door's recorder says who did it
    (a refusal may be counted in an aggregate instead, web/api/failed_auth.py)."""

    def __call__(self, action: str, outcome: str, object_digest: str | None = None,
                 detail: dict[str, Any] | None = None) -> None: ...


def audit_log(catalog: Catalog, after: int, limit: int) -> Answer:
    """Every write, oldest first, after entry ``after`` (``GET /api/v1/audit``); ``next_after`` continues."""
    items = [e.to_json() for e in audit.entries(catalog, after=after, limit=limit)]
    return {"items": items, "next_after": items[-1]["id"] if items else after}


def seconds_to_wait(accepted: Sequence[datetime], limit: int, window: timedelta, now: datetime) -> float:
    """0 when fewer than ``limit`` of the ``accepted`` times (oldest first, all inside ``window``) are
    counted, else the seconds until the oldest that counts leaves the window."""
    if len(accepted) < limit:
        return 0.0
    return (accepted[len(accepted) - limit] + window - now).total_seconds()
