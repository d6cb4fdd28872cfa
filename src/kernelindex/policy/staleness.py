"""Staleness: display only, never removes a run from ranking."""

from __future__ import annotations

from datetime import datetime, timedelta

STALE_AFTER = timedelta(days=180)


def is_stale(observed_at: datetime, now: datetime) -> bool:
    return now - observed_at > STALE_AFTER
