"""Types the spec bodies share: digests, slugs, durations in ns, instants, set-like lists and the
strict base model (refuses unknown fields, wrong types, NaN)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints
from pydantic_core import PydanticCustomError

from kernelindex.domain.instants import manifest_instant
from kernelindex.domain.units import DurationError, parse_duration_ns

Digest = Annotated[str, StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$")]
Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=120)]


def _duration(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a duration is an integer number of nanoseconds or a string like '58880ns'")
    if isinstance(value, str):
        try:
            return parse_duration_ns(value)
        except DurationError as exc:
            raise ValueError(str(exc)) from exc
    if isinstance(value, float):
        raise ValueError("a duration given as a bare float is ambiguous; write integer nanoseconds or '<n><unit>'")
    return value


def _measured(value: int) -> int:
    if value < 1:
        raise PydanticCustomError("measured_time", "a measured time must be at least 1 ns, got {value} ns",
                                  {"value": value})
    return value


DurationNs = Annotated[int, BeforeValidator(_duration), Field(ge=0)]
# Medians and quantiles are divisors in every ratio: zero or sub-nanosecond values are refused.
MeasuredNs = Annotated[int, BeforeValidator(_duration), AfterValidator(_measured)]


Instant = Annotated[datetime, AfterValidator(manifest_instant)]


def _sort_key(value: Any) -> str:
    plain = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    return json.dumps(plain, sort_keys=True)


def _sorted_unique(values: list[Any]) -> list[Any]:
    if len(values) < 2:  # most sets are empty or one element: nothing to sort (the read model validates thousands)
        return values
    unique = {_sort_key(v): v for v in values}
    return [unique[k] for k in sorted(unique)]


SetList = AfterValidator(_sorted_unique)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)
