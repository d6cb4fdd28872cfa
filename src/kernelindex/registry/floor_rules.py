"""The standard FLOP counts of imported operations (registry/floors.yaml)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from kernelindex.registry.documents import load_yaml


@dataclass(frozen=True)
class FlopRule:
    flops: str
    why: str


@cache
def _floor_rules() -> dict[str, Any]:
    return load_yaml("floors.yaml")


def flop_rule(family: str, slug: str, axes: set[str]) -> FlopRule | None:
    """The standard FLOP count for an imported operation (registry/floors.yaml), or None."""
    rules = _floor_rules()
    candidates = [*(rules["operations"].get(slug) or []), *(rules["families"].get(family) or [])]
    for rule in candidates:
        if set(rule["axes"]) <= axes and rule.get("slug_contains", "") in slug:
            return FlopRule(rule["flops"], rule["why"])
    return None
