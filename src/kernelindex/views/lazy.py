"""References the declarations make by name (``module:name``), imported on first use: the view table
names its builders and extras this way so that reading a page's parameters (the CLI's options) does not
load the read model and the catalog."""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any, TypeAlias

Ref: TypeAlias = Any  # a callable or type, or "module:name" naming one


def resolved(ref: Ref) -> Any:
    """What ``ref`` names (itself unless it is a ``module:name`` string)."""
    return _imported(ref) if isinstance(ref, str) else ref


@cache
def _imported(ref: str) -> Any:
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)
