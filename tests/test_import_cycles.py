"""No import cycle among the modules of ``kernelindex`` (docs/design.md §13 "Layout"): every import
statement counts, those under ``if TYPE_CHECKING:`` and inside functions included, because a cycle
through a type-only import is still two modules that cannot be read, tested or moved apart. Types
two modules share live in a third that both import (``resolve/cohorts.py``, ``runner/definitions.py``)."""

from __future__ import annotations

import ast
import graphlib
from collections.abc import Mapping
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def module_names(root: Path) -> dict[str, Path]:
    """Every module under ``root`` by dotted name (a package by its own name, not ``__init__``)."""
    found = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports_of(name: str, source: str, is_package: bool, known: Mapping[str, Path]) -> set[str]:
    """The known modules a module's source imports: ``from pkg import mod`` names the submodule
    ``pkg.mod``, ``from mod import name`` names ``mod``; relative imports are resolved."""
    package = name if is_package else name.rpartition(".")[0]
    named: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            named += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - node.level + 1], *([node.module] if node.module else [])])
            named += [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
    found = set()
    for target in named:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    known = module_names(root)
    return {name: imports_of(name, path.read_text(encoding="utf-8"), path.name == "__init__.py", known)
            for name, path in known.items()}


def first_cycle(graph: Mapping[str, set[str]]) -> list[str]:
    """One import cycle of the graph (its modules in import order, the first repeated last), or []."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        return list(error.args[1])
    return []


def test_no_import_cycle_in_kernelindex() -> None:
    cycle = first_cycle(import_graph(SRC))
    assert cycle == [], (f"import cycle: {' → '.join(cycle)} — move what these modules share into a module "
                         "both import")


def test_the_check_finds_a_type_only_cycle(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n")
    (package / "b.py").write_text("from . import c\n")
    (package / "c.py").write_text("def f():\n    from .a import A\n")
    assert set(first_cycle(import_graph(tmp_path))) == {"pkg.a", "pkg.b", "pkg.c"}
    (package / "c.py").write_text("import pkg\n")  # the package itself imports nothing: no cycle
    assert first_cycle(import_graph(tmp_path)) == []
