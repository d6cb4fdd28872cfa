"""Reading a stored BenchmarkRun, whatever the catalog holds. Publishing validates every manifest,
but a catalog published before a rule existed (or edited by hand) may store values that no longer
validate: a zero, negative, non-numeric or overflowing median. Readers never fail on them: the
values validation refuses are set aside and named, so policy can show the run as invalid and never
rank or count it (``policy.eligibility``). Only a run whose required parts are unreadable is left
out of the read model, with its reason."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from kernelindex.domain.specs import BenchmarkRunBody

_MAX_SALVAGE_PASSES = 4  # each pass sets aside every refused value; nested refusals need another


class _StoredRun(BaseModel):
    """A stored BenchmarkRun as the read model needs it: the spec, validated in full; the envelope
    (apiVersion, kind, metadata) was checked when it was published and is not kept, so building the
    whole manifest (its metadata, its cache slots) for ~12,000 runs only to drop it is skipped (-20%)."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)
    spec: BenchmarkRunBody


class UnreadableRun(ValueError):
    """A stored run whose required parts (status, references, instants) cannot be read."""


def stored_spec(body: str | bytes) -> tuple[BenchmarkRunBody, tuple[str, ...]]:
    """The run's spec and, for each stored value validation refuses, a phrase naming the field, the
    value and the rule (``timing.median_ns = 0: a measured time must be at least 1 ns``)."""
    try:
        return _StoredRun.model_validate_json(body).spec, ()  # JSON mode: the stored instants are strings
    except ValidationError as refusal:
        return _salvaged(body, refusal)


def _salvaged(body: str | bytes, refusal: ValidationError) -> tuple[BenchmarkRunBody, tuple[str, ...]]:
    try:
        data = json.loads(body)  # the standard parser reads NaN, Infinity and 1e400 as floats
    except ValueError as exc:
        raise UnreadableRun(f"its stored manifest is not JSON ({exc})") from None
    refused: list[str] = []
    for _ in range(_MAX_SALVAGE_PASSES):
        for problem in sorted(refusal.errors(), key=lambda p: [str(part) for part in p["loc"]], reverse=True):
            refused.append(_set_aside(data, problem))
        try:
            return _StoredRun.model_validate_json(json.dumps(data)).spec, tuple(refused)
        except ValidationError as again:
            refusal = again
    raise UnreadableRun(f"its stored manifest still fails validation after {len(refused)} values were set aside")


def _set_aside(data: Any, problem: Any) -> str:
    """Remove the refused value (its field's default then applies) and describe it."""
    parent, key = _deepest(data, list(problem["loc"]))
    field = ".".join(str(part) for part in problem["loc"][1:]) or "spec"
    rule = str(problem["msg"]).removeprefix("Value error, ")
    if problem["type"] == "missing" or parent is data:
        raise UnreadableRun(f"its stored manifest has no usable {field} ({rule})")
    value = parent.pop(key)
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    return f"{field} = {shown} ({rule})"


def _deepest(data: Any, path: list[Any]) -> tuple[Any, Any]:
    """The container and key of the deepest part of ``path`` present in ``data`` (a validation error's
    location may end in a union member's tag, which the data does not have)."""
    parent, key = None, None
    node = data
    for part in path:
        present = (isinstance(node, dict) and part in node) or \
            (isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node))
        if not present:
            break
        parent, key, node = node, part, node[part]
    return (data, None) if parent is None else (parent, key)
