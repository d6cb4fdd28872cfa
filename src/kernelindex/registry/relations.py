"""Reviewed relations between operations that are not the same operation (relations.yaml): today the
"same shape, other dtype" pattern pairs that ``policy.other_dtype`` checks against both specs."""

from __future__ import annotations

from functools import cache

from kernelindex.registry.documents import load_yaml


@cache
def relation_rules() -> tuple[dict[str, str], ...]:
    """Reviewed "same shape, other dtype" pattern pairs: here, there (``{field}`` integers), and why."""
    rules = load_yaml("relations.yaml").get("same_shape_other_dtype") or []
    return tuple({"here": r["here"], "there": r["there"], "why": r["why"]} for r in rules)
