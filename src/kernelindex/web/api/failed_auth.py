"""Refusals, recorded aggregated: one audit entry per minute and *who* (source address, and the API key
and action and outcome for an authenticated refusal), with a count, written when the first refusal of
that minute arrives and brought up to date at most every ``FLUSH_SECONDS`` (and when the minute has
passed, at the next refusal of anyone). A thousand requests with a bogus token add one entry, not a
thousand; so do a thousand refused uploads of one key, or a thousand asks of one address past its rate
(issue 51: 1,396 rows in 10 s from one client; ~350 a second from refused authenticated requests).
At most ``MAX_SOURCES`` entries are counted apart per minute; the rest share one entry per action under
``OTHER_SOURCES``. Counts are per server process (each worker keeps its own entry), and a process that
dies loses at most the refusals of its last ``FLUSH_SECONDS``. Accepted writes are never aggregated:
each is its own entry (the rate limits count them)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from kernelindex.catalog import audit

ACTION = "auth.failed"
FLUSH_SECONDS = 5.0
MAX_SOURCES = 1000
OTHER_SOURCES = "(other sources)"


@dataclass(frozen=True)
class Who:
    """What one aggregate entry counts: the audit fields that are the same for every refusal in it."""

    actor: str
    action: str
    outcome: str
    client: str
    api_key: str | None = None
    scope: str | None = None


@dataclass
class _Minute:
    entry: int | None = None
    count: int = 0
    written: int = 0
    written_at: datetime | None = None
    detail: dict[str, Any] = field(default_factory=dict)


class RefusalLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._minutes: dict[tuple[datetime, Who], _Minute] = {}

    def refused(self, catalog: Any, who: Who, now: datetime, detail: dict[str, Any] | None = None) -> None:
        """Count one refusal of ``who``; write to the audit log only when due."""
        minute = now.replace(second=0, microsecond=0)
        with self._lock:  # writes happen under it: they are rare, and an entry is written by one thread
            for (at, earlier), bucket in list(self._minutes.items()):
                if at < minute:
                    if bucket.count > bucket.written:
                        self._save(catalog, at, earlier, bucket, now)
                    del self._minutes[(at, earlier)]
            if (minute, who) not in self._minutes and len(self._minutes) >= MAX_SOURCES:
                who = Who(who.actor if who.action == ACTION else "(many)", who.action, who.outcome, OTHER_SOURCES)
            bucket = self._minutes.setdefault((minute, who), _Minute())
            bucket.count, bucket.detail = bucket.count + 1, dict(detail or {})
            if bucket.written_at is None or now - bucket.written_at >= timedelta(seconds=FLUSH_SECONDS):
                self._save(catalog, minute, who, bucket, now)

    @staticmethod
    def _save(catalog: Any, minute: datetime, who: Who, bucket: _Minute, now: datetime) -> None:
        count = "failures" if who.action == ACTION else "refusals"
        detail = {**bucket.detail, count: bucket.count, "minute": minute.isoformat()}
        if bucket.entry is None:
            bucket.entry = audit.record(catalog, actor=who.actor, action=who.action, outcome=who.outcome,
                                        client=who.client, api_key=who.api_key, scope=who.scope, detail=detail,
                                        at=minute)
        else:
            audit.update_detail(catalog, bucket.entry, detail)
        bucket.written, bucket.written_at = bucket.count, now


class FailedAuthLog(RefusalLog):
    def failed(self, catalog: Any, client: str | None, reason: str, now: datetime) -> None:
        """Count one failed authentication from ``client``."""
        self.refused(catalog, Who("unauthenticated", ACTION, "refused: unauthorized", client or "unknown"), now,
                     {"last_reason": reason[:200]})
