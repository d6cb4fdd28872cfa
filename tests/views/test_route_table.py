"""One route table (issue 9): every page is declared once in ``kernelindex.views``; its HTML route
and its JSON twin are mounted from that declaration; no parameter pattern and no translation of
read errors is written twice."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from fastapi.routing import APIRoute

from kernelindex.views import params
from kernelindex.views.table import VIEWS
from kernelindex.web import view_routes
from kernelindex.web.api.openapi import _NoCatalog
from kernelindex.web.app import create_app

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "kernelindex"
DECLARED = {value for name, value in vars(params).items() if name.endswith("_PATTERN")}
READ_ERROR_NAMES = {"NotFound", "BadSelection", "BadParameter"}


@pytest.fixture(scope="module")
def app() -> Any:
    return create_app(_NoCatalog())


def test_every_view_mounts_its_page_and_its_json_twin(app: Any) -> None:
    html = {r.path for r in view_routes.router.routes if isinstance(r, APIRoute) and "GET" in (r.methods or set())}
    api = {path for path, item in app.openapi()["paths"].items() if "get" in item}
    assert [v.name for v in VIEWS if v.path not in html] == []
    assert [v.name for v in VIEWS if v.api_path not in api] == []


def _get_paths(routes: Any) -> list[str]:
    """The path of every GET route of the app, included routers walked (a path mounted twice is listed twice)."""
    found = []
    for route in routes:
        if (included := getattr(route, "original_router", None)) is not None:
            found += _get_paths(included.routes)
        elif isinstance(route, APIRoute) and "GET" in (route.methods or set()):
            found.append(route.path)
    return found


def test_each_page_and_twin_is_mounted_once(app: Any) -> None:
    paths = _get_paths(app.router.routes)
    assert {v.path for v in VIEWS} | {v.api_path for v in VIEWS} <= set(paths)
    assert sorted({p for p in paths if paths.count(p) > 1}) == []


def test_every_parameter_pattern_in_the_api_is_declared_once_in_the_page_table(app: Any) -> None:
    used = set()
    for operation in (op for item in app.openapi()["paths"].values() for op in item.values()):
        for parameter in operation.get("parameters", []):
            schema = parameter["schema"]
            for option in [schema, *schema.get("anyOf", []), schema.get("items", {})]:
                if "pattern" in option:
                    used.add(option["pattern"])
    assert used and used <= DECLARED


def _modules() -> list[tuple[str, ast.AST]]:
    return [(str(path.relative_to(PACKAGE)), ast.parse(path.read_text(encoding="utf-8")))
            for path in sorted(PACKAGE.rglob("*.py"))]


def test_no_pattern_is_written_outside_the_page_table() -> None:
    copies = [(name, node.value) for name, tree in _modules() if name != "views/params.py"
              for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value in DECLARED]
    assert not copies


# Modules that catch a read error to fall back, never to answer with it (no Problem comes of them).
READ_ERROR_FALLBACKS = {
    "web/answer_cache.py": "a page that answers 404 is kept by its operation's version alone",
    "readmodel/other_dtype.py": "a reviewed counterpart that this catalog does not hold is skipped",
    "readmodel/model_calls.py": "an operation a model's call could map to that this catalog does not hold is skipped",
}


def test_read_errors_are_translated_in_one_place() -> None:
    handlers = []
    for name, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ExceptHandler) and node.type is not None:
                caught = {n.id for n in ast.walk(node.type) if isinstance(n, ast.Name)}
                if caught & READ_ERROR_NAMES and name not in READ_ERROR_FALLBACKS:
                    handlers.append(name)
    assert handlers == [], "catch READ_ERRORS and translate with services.problems.read_refusal"
    translators = {name for name, tree in _modules() for node in ast.walk(tree)
                   if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "read_refusal"}
    # services translate (the questions, and the CLI's operation brief, which does not import the questions)
    assert translators == {"web/pages.py", "services/reads.py", "services/operation_brief.py"}
