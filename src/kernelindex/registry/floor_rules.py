"""The standard FLOP counts of imported operations (registry/floors.yaml), and the one way floor-v1 gets an
operation's FLOPs (``floor_flops``, ``floor_spec``): pages, API, CLI and the runner all read it from here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from kernelindex.domain.manifests import OperationSpec, manifest_json
from kernelindex.registry.documents import load_yaml

# The source whose operations the rules count FLOPs for (the export importer applies them; other importers
# state their own counts, e.g. KernelBench's counted FLOPs).
RULED_SOURCE = "kernelindex-export"
DECLARED_FLOPS = "the operation's declared formula"


@dataclass(frozen=True)
class FlopRule:
    flops: str
    why: str
    in_spec: bool = False  # also written into the imported spec (part of its digest): see floors.yaml


@cache
def _floor_rules() -> dict[str, Any]:
    return load_yaml("floors.yaml")


def flop_rule(family: str, slug: str, axes: set[str]) -> FlopRule | None:
    """The standard FLOP count for an imported operation (registry/floors.yaml), or None."""
    rules = _floor_rules()
    candidates = [*(rules["operations"].get(slug) or []), *(rules["families"].get(family) or [])]
    for rule in candidates:
        if set(rule["axes"]) <= axes and rule.get("slug_contains", "") in slug:
            return FlopRule(rule["flops"], rule["why"], bool(rule.get("in_spec")))
    return None


def floor_flops(operation: OperationSpec) -> FlopRule | None:
    """The FLOP formula floor-v1 uses for ``operation``, and why; None: a bandwidth-only floor.

    An operation imported through the KernelIndex export gets the registry's rule, read now rather than
    from its spec: a rule added after its import (gqa-ragged's) must not change its digest, which signed
    runner bundles and imported runs reference. Every other operation (and an imported one no rule
    covers) has the formula its spec declares."""
    spec = operation.spec
    if operation.metadata.labels.get("imported_from") == RULED_SOURCE:
        rule = flop_rule(spec.family, operation.slug, set(spec.axes))
        if rule is not None:
            return rule
    return FlopRule(spec.flops, DECLARED_FLOPS) if spec.flops else None


def floor_spec(operation: OperationSpec, spec: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The operation's spec in the JSON form ``policy.floor`` takes, its ``flops`` the one ``floor_flops``
    gives (``spec``: that JSON form already at hand; not modified)."""
    body = dict(spec if spec is not None else manifest_json(operation)["spec"])
    rule = floor_flops(operation)
    if rule is None:
        body.pop("flops", None)
    else:
        body["flops"] = rule.flops
    return body
