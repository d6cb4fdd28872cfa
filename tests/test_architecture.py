"""The layout is the architecture (DESIGN §12): dependencies point inward to domain, and the
web app never imports the runner. Checked on every import statement, lazy ones included."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "kernelindex"
ALLOWED = {
    "domain": {"domain"},
    "policy": {"domain", "policy", "registry"},
    "registry": {"domain", "registry"},
    "catalog": {"catalog", "domain", "policy"},
    "sources": {"sources", "catalog", "domain", "policy", "registry"},
    "readmodel": {"readmodel", "catalog", "domain", "policy", "registry"},
    "resolve": {"resolve", "readmodel", "catalog", "domain", "policy", "registry"},
    "web": {"web", "resolve", "readmodel", "catalog", "domain", "policy", "registry"},
    "trust": {"trust", "catalog", "domain", "policy", "registry"},
    "runner": {"runner", "trust", "catalog", "domain", "policy", "registry"},
}


def _imported_layers(path: Path) -> set[str]:
    layers = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "kernelindex" and len(parts) > 1 and (PACKAGE / parts[1]).is_dir():
                layers.add(parts[1])
    return layers


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_imports_only_inward(layer: str) -> None:
    offending = {
        str(path.relative_to(PACKAGE)): sorted(_imported_layers(path) - ALLOWED[layer])
        for path in (PACKAGE / layer).rglob("*.py")
        if _imported_layers(path) - ALLOWED[layer]
    }
    assert not offending, f"{layer}/ imports outward: {offending}"
