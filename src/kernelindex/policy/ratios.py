"""The one way to divide durations: every "N×" on the site, in the API and the CLI comes from here."""

from __future__ import annotations


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """``numerator / denominator``, or None when either is missing or the denominator is not positive.

    Validation refuses non-positive durations, but a catalog may hold rows published before it
    did; a ratio against such a value means nothing, so it is absent rather than an error."""
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator
