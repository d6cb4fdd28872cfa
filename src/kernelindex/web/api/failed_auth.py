"""Failed authentication, recorded aggregated: one audit entry per source address and minute, with a
count, written when the first failure of that minute arrives and brought up to date at most every
``FLUSH_SECONDS`` (and when the minute has passed, at the next failure of any source). A thousand
requests with a bogus token add one entry, not a thousand. At most ``MAX_SOURCES`` addresses are
counted apart per minute; the rest share one entry under ``OTHER_SOURCES``. Counts are per server
process (each worker keeps its own entry), and a process that dies loses at most the failures of its
last ``FLUSH_SECONDS``."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kernelindex.catalog import audit

ACTION = "auth.failed"
FLUSH_SECONDS = 5.0
MAX_SOURCES = 1000
OTHER_SOURCES = "(other sources)"


@dataclass
class _Minute:
    entry: int | None = None
    count: int = 0
    written: int = 0
    written_at: datetime | None = None
    reason: str = ""


class FailedAuthLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._minutes: dict[tuple[datetime, str], _Minute] = {}

    def failed(self, catalog: Any, client: str | None, reason: str, now: datetime) -> None:
        """Count one failed authentication from ``client``; write to the audit log only when due."""
        minute = now.replace(second=0, microsecond=0)
        with self._lock:  # writes happen under it: they are rare, and a source's entry is written by one thread
            for (at, source), bucket in list(self._minutes.items()):
                if at < minute:
                    if bucket.count > bucket.written:
                        self._save(catalog, at, source, bucket, now)
                    del self._minutes[(at, source)]
            source = client or "unknown"
            if (minute, source) not in self._minutes and len(self._minutes) >= MAX_SOURCES:
                source = OTHER_SOURCES
            bucket = self._minutes.setdefault((minute, source), _Minute())
            bucket.count, bucket.reason = bucket.count + 1, reason[:200]
            if bucket.written_at is None or now - bucket.written_at >= timedelta(seconds=FLUSH_SECONDS):
                self._save(catalog, minute, source, bucket, now)

    @staticmethod
    def _save(catalog: Any, minute: datetime, source: str, bucket: _Minute, now: datetime) -> None:
        detail = {"failures": bucket.count, "minute": minute.isoformat(), "last_reason": bucket.reason}
        if bucket.entry is None:
            bucket.entry = audit.record(catalog, actor="unauthenticated", action=ACTION,
                                        outcome="refused: unauthorized", client=source, detail=detail, at=minute)
        else:
            audit.update_detail(catalog, bucket.entry, detail)
        bucket.written, bucket.written_at = bucket.count, now
