"""Sizes a newcomer can read at once (docs/design.md §13): no module over 400 lines, no function over 60.
Split by what the code holds when one grows past them; the failure names the offender."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "kernelindex"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def too_long(source: str, name: str) -> list[str]:
    """The module itself and each function (methods and nested ones too) over the limits."""
    found = []
    if (lines := len(source.splitlines())) > MAX_MODULE_LINES:
        found.append(f"{name}: {lines} lines (at most {MAX_MODULE_LINES})")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{name}:{node.lineno} {node.name}() is {length} lines (at most {MAX_FUNCTION_LINES})")
    return found


def test_no_module_or_function_is_too_long() -> None:
    found = [problem for path in sorted(PACKAGE.rglob("*.py"))
             for problem in too_long(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE)))]
    assert not found, "\n".join(found)


def test_the_check_sees_a_long_function_and_a_long_module() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    assert too_long(f"def f():\n{body}\n", "m.py") == [f"m.py:1 f() is {MAX_FUNCTION_LINES + 1} lines (at most 60)"]
    assert too_long("x = 1\n" * (MAX_MODULE_LINES + 1), "m.py") == ["m.py: 401 lines (at most 400)"]
    assert too_long("def f():\n    return 1\n", "m.py") == []
