"""The registered sources: adding one is its own package (which declares ``SOURCE`` in its ``__init__``,
``sources.declaration``, and holds its source policy in ``policy.yaml``) plus its line in
``registry/sources.yaml``'s ``registered`` list, whose order is the start-up's import order (docs/design.md
§10). The registry reads the packages' policies from the same list, as documents."""

from __future__ import annotations

import importlib
from functools import cache

from kernelindex import registry
from kernelindex.sources.declaration import SourceDeclaration

REGISTERED = tuple(f"kernelindex.sources.{package}" for package in registry.registered_sources())


@cache
def declarations() -> tuple[SourceDeclaration, ...]:
    """Every registered source's declaration, in import order (each package imported on first use)."""
    found = []
    for module in REGISTERED:
        declared = getattr(importlib.import_module(module), "SOURCE", None)
        if not isinstance(declared, SourceDeclaration):
            raise TypeError(f"{module} is registered in registry/sources.yaml but declares no SOURCE "
                            "(a sources.declaration.SourceDeclaration) in its __init__")
        found.append(declared)
    return tuple(found)


def declaration(part: str) -> SourceDeclaration:
    """The declaration of the bundled part ``part`` (``aiter``); KeyError naming the known ones otherwise."""
    for declared in declarations():
        if declared.part == part:
            return declared
    raise KeyError(f"no registered source {part!r}; registered: {', '.join(d.part for d in declarations())}")
