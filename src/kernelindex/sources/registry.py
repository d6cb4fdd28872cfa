"""The registered sources: adding one is its own package (which declares ``SOURCE`` in its ``__init__``,
``sources.declaration``) plus one line here. The order is the start-up's import order (docs/design.md §10)."""

from __future__ import annotations

import importlib
from functools import cache

from kernelindex.sources.declaration import SourceDeclaration

REGISTERED = (
    "kernelindex.sources.liger",
    "kernelindex.sources.kernelindex_export",
    "kernelindex.sources.aiter",
    "kernelindex.sources.kernelbench",
)


@cache
def declarations() -> tuple[SourceDeclaration, ...]:
    """Every registered source's declaration, in import order (each package imported on first use)."""
    found = []
    for module in REGISTERED:
        declared = getattr(importlib.import_module(module), "SOURCE", None)
        if not isinstance(declared, SourceDeclaration):
            raise TypeError(f"{module} is registered in sources/registry.py but declares no SOURCE "
                            "(a sources.declaration.SourceDeclaration) in its __init__")
        found.append(declared)
    return tuple(found)


def declaration(part: str) -> SourceDeclaration:
    """The declaration of the bundled part ``part`` (``aiter``); KeyError naming the known ones otherwise."""
    for declared in declarations():
        if declared.part == part:
            return declared
    raise KeyError(f"no registered source {part!r}; registered: {', '.join(d.part for d in declarations())}")
