"""Turn read-model dataclasses into JSON data (datetimes as ISO 8601 UTC)."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

_OWN: tuple[str, ...] = ("to_json",)  # (this very tuple) a dataclass type that writes its own JSON


_SHAPES: dict[type, tuple[str, ...] | None] = {}


def _shape(kind: type) -> tuple[str, ...] | None:
    """How values of one type are written, decided once per type (a page of ~60,000 cohorts asked it of
    every value): a plain dataclass's field names, ``_OWN`` for a dataclass with its own ``to_json``,
    None for anything else."""
    if kind in _SHAPES:
        return _SHAPES[kind]
    if not dataclasses.is_dataclass(kind):
        shape = None
    elif hasattr(kind, "to_json") and not getattr(kind, "_plain", False):
        shape = _OWN
    else:
        shape = tuple(f.name for f in dataclasses.fields(kind))
    _SHAPES[kind] = shape
    return shape


def to_jsonable(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float):
        return value
    shape = _shape(type(value))
    if shape is _OWN:
        return value.to_json()
    if shape is not None:
        return {name: to_jsonable(getattr(value, name)) for name in shape}
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    return value


class JsonModel:
    """Mixin: ``to_json()`` = every field, recursively."""

    _plain = True

    def to_json(self) -> dict[str, Any]:
        return {name: to_jsonable(getattr(self, name)) for name in _shape(type(self)) or ()}
