"""Source policy as a rule: rows of a refused source are never stored."""

from __future__ import annotations

from collections.abc import Mapping


def refusal_of(source_name: str, refused: Mapping[str, str]) -> str | None:
    """Why rows of this source may not be stored (``refused`` maps refused source names to their
    reasons, from the registry's source policy), or None when they may."""
    reason = refused.get(source_name)
    return f"source {source_name!r} is refused by source policy: {reason}" if reason is not None else None
