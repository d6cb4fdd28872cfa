"""Turn read-model dataclasses into JSON data (datetimes as ISO 8601 UTC)."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any


def to_jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if hasattr(value, "to_json") and not getattr(value, "_plain", False):
            return value.to_json()
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
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
        # JsonModel is only ever mixed into dataclasses, which mypy cannot see from the mixin itself.
        return {f.name: to_jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}  # type: ignore[arg-type]
