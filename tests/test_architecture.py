"""The layout is the architecture (docs/design.md §13): dependencies point inward to domain, and the web
app never imports the runner. Every import statement counts (lazy and relative ones included), and
every top-level module or package of ``kernelindex`` must be declared here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "kernelindex"
_CORE = {"domain", "policy", "registry", "urls"}  # urls: the one URL builder, importing nothing
# layer → the layers it may import (besides itself). ``__init__`` is kernelindex/__init__.py.
ALLOWED: dict[str, set[str]] = {
    "__init__": set(),
    "data": set(),
    "urls": set(),
    "domain": set(),
    "policy": {"domain"},
    "registry": {"domain"},
    "catalog": {"domain", "policy", "urls"},
    "sources": {"catalog"} | _CORE,
    "readmodel": {"catalog"} | _CORE,
    "resolve": {"readmodel", "catalog"} | _CORE,
    "trust": {"readmodel", "catalog"} | _CORE,
    "views": {"resolve", "readmodel", "catalog"} | _CORE,
    # the hall between the front doors: one function per question or command, an answer or a Problem
    "services": {"views", "resolve", "readmodel", "trust", "catalog"} | _CORE,
    # web verifies API keys (trust/); trust never imports web.
    "web": {"services", "views", "resolve", "readmodel", "trust", "catalog"} | _CORE,
    "runner": {"trust", "readmodel", "catalog"} | _CORE,
    # GPU campaigns: plan from the shipped runs, prepare cases from the sources, drive the runner, ship bundles
    "campaigns": {"runner", "sources", "trust", "readmodel", "catalog"} | _CORE,
    "bootstrap": {"sources", "trust", "readmodel", "catalog"} | _CORE,
    "cli": {"bootstrap", "campaigns", "runner", "trust", "services", "web", "views", "resolve", "readmodel", "sources",
            "catalog"} | _CORE,
}


def layer_of(path: Path) -> str:
    """The layer a source file belongs to: its top-level package, or the module's own name."""
    first = path.relative_to(PACKAGE).parts[0]
    return first.removesuffix(".py")


def _absolute(node: ast.ImportFrom, path: Path) -> str:
    """The module an import names, with relative imports resolved against ``path``'s package."""
    if node.level == 0:
        return node.module or ""
    package = ["kernelindex", *path.relative_to(PACKAGE).parent.parts]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imported_layers(source: str, path: Path) -> set[str]:
    """The kernelindex layers a module's source imports, lazy and relative imports included."""
    layers = set()
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, path)
            names = [module] + [f"{module}.{alias.name}" for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "kernelindex" and len(parts) > 1 and parts[1] in ALLOWED:
                layers.add(parts[1])
    return layers


def outward_edges(source: str, path: Path) -> set[str]:
    layer = layer_of(path)
    return imported_layers(source, path) - ALLOWED[layer] - {layer}


def test_every_top_level_module_and_package_is_a_declared_layer() -> None:
    found = {p.name.removesuffix(".py") for p in PACKAGE.iterdir()
             if (p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py"}
    assert found - set(ALLOWED) == set(), "declare the new layer in ALLOWED (what may it import?)"
    assert set(ALLOWED) - found == set(), "a declared layer no longer exists"


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_imports_only_inward(layer: str) -> None:
    files = [PACKAGE / f"{layer}.py"] if (PACKAGE / f"{layer}.py").exists() else (PACKAGE / layer).rglob("*.py")
    offending = {
        str(path.relative_to(PACKAGE)): sorted(edges)
        for path in files
        if (edges := outward_edges(path.read_text(encoding="utf-8"), path))
    }
    assert not offending, f"{layer} imports outward: {offending}"


@pytest.mark.parametrize(("file", "source", "edge"), [
    ("policy/floor.py", "from kernelindex.registry import GpuSpec", "registry"),
    ("policy/floor.py", "from ..registry import GpuSpec", "registry"),
    ("policy/floor.py", "def f():\n    import kernelindex.catalog.db\n", "catalog"),
    ("web/app.py", "from kernelindex.runner import verify", "runner"),
    ("readmodel/x.py", "from kernelindex import web", "web"),
    ("bootstrap.py", "from kernelindex.cli import app", "cli"),
    ("domain/x.py", "from . import specs\nfrom ..policy import floor", "policy"),
])
def test_the_check_catches_an_outward_edge(file: str, source: str, edge: str) -> None:
    assert outward_edges(source, PACKAGE / file) == {edge}


def test_the_read_path_is_closed() -> None:
    """Outside catalog/ (which writes) and readmodel/ (which reads), nothing touches tables or SQL."""
    touching = sorted(
        str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
        if layer_of(path) not in ("catalog", "readmodel")
        and any(name == "sqlalchemy" or name.startswith(("sqlalchemy.", "kernelindex.catalog.models"))
                for name in _imported_modules(path.read_text(encoding="utf-8"), path))
    )
    assert touching == []


def _imported_modules(source: str, path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add(_absolute(node, path))
    return found


def test_the_check_allows_inward_and_same_layer_edges() -> None:
    same_layer = "from . import specs\nfrom kernelindex.domain.units import x"
    assert outward_edges(same_layer, PACKAGE / "domain/x.py") == set()
    assert outward_edges("from kernelindex.policy import floor", PACKAGE / "readmodel/x.py") == set()


def page_builder_files() -> set[str]:
    """The modules of the builders the view table declares (``views/table.py``): the pages' projections."""
    from kernelindex.views.table import VIEWS

    return {module.removeprefix("kernelindex.").replace(".", "/") + ".py"
            for module in {view.build.__module__ for view in VIEWS}}


def _imports_policy(file: str) -> bool:
    path = PACKAGE / file
    return "policy" in imported_layers(path.read_text(encoding="utf-8"), path)


def test_page_builders_are_projections_that_import_no_policy() -> None:
    """A page lays out the model the read model derived (``readmodel/operation_model.py`` for an operation):
    it never enters a floor, ranking, selection or evidence rule itself (docs/design.md §6)."""
    builders = page_builder_files()
    assert "readmodel/operations.py" in builders and "readmodel/pages_home.py" in builders
    offending = sorted(f for f in builders if _imports_policy(f))
    assert offending == [], f"page builders import policy modules: {offending}"
