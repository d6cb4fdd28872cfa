"""Instants are UTC. SQLite hands timezone-aware columns back naive; this puts the zone back."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import overload


@overload
def as_utc(value: datetime) -> datetime: ...
@overload
def as_utc(value: None) -> None: ...
def as_utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# The first CUDA GPUs shipped in 2007; a year outside this range is a broken clock or a typo, never
# a measurement (a measured_at of 0001 would sort as the oldest record forever).
EARLIEST_YEAR, LATEST_YEAR = 2007, 2100


class ImplausibleInstant(ValueError):
    """An instant whose year no GPU measurement can have."""


def check_year(value: datetime, field: str) -> datetime:
    if not EARLIEST_YEAR <= value.year <= LATEST_YEAR:
        raise ImplausibleInstant(f"{field} is in the year {value.year:04d}: a measurement's time must lie in "
                                 f"{EARLIEST_YEAR}–{LATEST_YEAR}")
    return value


def manifest_instant(value: datetime) -> datetime:
    """A manifest's instant: with a time zone (stored in UTC), in a year a measurement can have."""
    if value.tzinfo is None:
        raise ValueError("instant has no time zone; add 'Z' or an offset")
    return check_year(value.astimezone(UTC), "the instant")
