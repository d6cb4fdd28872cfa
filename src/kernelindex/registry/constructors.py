"""How a usage snippet builds each module class (registry/constructors.yaml)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from kernelindex.registry.documents import RegistryError, load_yaml


@dataclass(frozen=True)
class ModuleConstructor:
    """How a snippet builds one module class (registry/constructors.yaml)."""

    args: tuple[str | int, ...]
    kwargs: dict[str, int]
    forward: tuple[str, ...]


@cache
def module_constructors() -> dict[str, ModuleConstructor]:
    """``module.Symbol`` → its constructor template."""
    found = {}
    for name, entry in load_yaml("constructors.yaml")["constructors"].items():
        unknown = set(entry) - {"args", "kwargs", "forward"}
        if unknown or not entry.get("forward"):
            raise RegistryError(f"registry/constructors.yaml: {name}: give forward (a list of input names) and "
                                f"optionally args and kwargs; unknown keys {sorted(unknown)}")
        found[name] = ModuleConstructor(tuple(entry.get("args", ())), dict(entry.get("kwargs", {})),
                                        tuple(entry["forward"]))
    return found
