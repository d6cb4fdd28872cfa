"""Shape expressions over named axes: ``hidden // q_heads``, ``min(vocab, batch * seq)``.

Hand-rolled on ``ast`` rather than ``eval``: the registry is data and must never execute code;
only integer arithmetic, names and min/max are accepted.
"""

from __future__ import annotations

import ast
import functools
import keyword
import operator
import threading
from collections.abc import Mapping

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_CALLS = {"min": min, "max": max}
_PARSE_LOCK = threading.Lock()


class ExpressionError(ValueError):
    pass


def evaluate(expression: str | int, axes: Mapping[str, int]) -> int:
    if isinstance(expression, int):
        return expression
    if expression in axes and _is_name(expression):  # most dimensions are one axis: what _eval answers
        return axes[expression]
    try:
        tree = _parse(expression)
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse expression {expression!r}") from exc
    return _eval(tree.body, axes, expression)


def _eval(node: ast.AST, axes: Mapping[str, int], text: str) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in axes:
            raise ExpressionError(f"expression {text!r} uses unknown axis {node.id!r}")
        return axes[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_eval(node.left, axes, text), _eval(node.right, axes, text))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLS:
        return _CALLS[node.func.id](*(_eval(arg, axes, text) for arg in node.args))
    raise ExpressionError(f"expression {text!r}: only integers, axis names, + - * // % ** min max allowed")


@functools.lru_cache(maxsize=4096)
def _is_name(expression: str) -> bool:
    """Whether ``expression`` parses to a bare name of itself (not a keyword such as True; ASCII, since
    the parser folds other identifiers to their NFKC form)."""
    return expression.isascii() and expression.isidentifier() and not keyword.iskeyword(expression)


@functools.lru_cache(maxsize=4096)
def _parse(expression: str) -> ast.Expression:
    # CPython before 3.13 keeps the AST converter's recursion depth in interpreter-wide state, so two
    # threads parsing at once can fail with "AST constructor recursion depth mismatch" (a SystemError
    # seen with concurrent publications). Parse under one lock; the cache makes the lock rare.
    with _PARSE_LOCK:
        return ast.parse(expression, mode="eval")
