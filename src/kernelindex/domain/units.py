"""Durations in integer nanoseconds, parsing and human formatting."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from kernelindex.domain.numbers import MAX_NUMBER_CHARS, NUMBER_PATTERN

NS_PER_UNIT = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
# The number as domain.numbers writes one, then the unit (one space between them at most).
_DURATION = re.compile(rf"({NUMBER_PATTERN}) ?(ns|us|µs|μs|ms|s)")


class DurationError(ValueError):
    pass


def parse_duration_ns(text: str) -> int:
    """``"58.88us"`` → 58880. Refuses values that are not a whole number of nanoseconds."""
    match = _DURATION.fullmatch(text) if len(text) <= MAX_NUMBER_CHARS else None
    if not match:
        raise DurationError(f"duration {text[:60]!r} is not '<number><unit>' with unit ns, us, ms or s (e.g. "
                            "'58880ns'; no spaces around it, no '_' or '+')")
    try:
        value = Decimal(match.group(1)) * NS_PER_UNIT[match.group(2)]
    except InvalidOperation as exc:  # pragma: no cover - regex guarantees a decimal
        raise DurationError(f"duration {text!r} is not a number") from exc
    if value != value.to_integral_value():
        raise DurationError(f"duration {text!r} is not a whole number of nanoseconds")
    return int(value)


def ms_to_ns(ms: float) -> int:
    """Source values in milliseconds → nearest integer nanosecond (half away from zero)."""
    return int((Decimal(repr(ms)) * 1_000_000).quantize(Decimal(1), rounding="ROUND_HALF_UP"))


def format_duration(ns: float | int | None, digits: int = 1) -> str:
    """Auto-scaled: 58880 → '58.9 µs', 1_933_000 → '1.93 ms'."""
    if ns is None:
        return "—"
    ns = float(ns)
    if ns < 1_000:
        return f"{ns:.0f} ns"
    if ns < 1_000_000:
        return f"{ns / 1_000:.{digits}f} µs"
    if ns < 1_000_000_000:
        return f"{ns / 1_000_000:.{max(digits, 2)}f} ms"
    return f"{ns / 1_000_000_000:.{max(digits, 2)}f} s"


def format_ratio(ratio: float | None) -> str:
    return "—" if ratio is None else f"{ratio:.2f}×"


def format_bytes(n: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:.0f} B"
