"""Staleness: display only, never removes a run from ranking."""

from __future__ import annotations

from datetime import datetime, timedelta

STALE_AFTER = timedelta(days=180)


def is_stale(observed_at: datetime, now: datetime) -> bool:
    """A run observed more than STALE_AFTER (180 days) before ``now`` is stale; it stays ranked."""
    return now - observed_at > STALE_AFTER
