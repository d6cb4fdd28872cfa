"""Integer query and path parameters of the API, read by the domain's one integer rule."""

from __future__ import annotations

from typing import Any

from pydantic import BeforeValidator

from kernelindex.domain.numbers import parse_integer


def _integer_text(value: Any) -> Any:
    """Integer query and path parameters arrive as text: the domain's one integer rule reads them, so
    ``?limit=1_0`` and ``?limit=%2010`` are refused (Python's ``int()`` would take both)."""
    return parse_integer(value, "the value") if isinstance(value, str) else value


# Put after the parameter's Query()/Path() in Annotated, so its minimum/maximum stay in the schema.
STRICT_INTEGER = BeforeValidator(_integer_text)
