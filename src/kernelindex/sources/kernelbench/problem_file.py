"""What a KernelBench problem file says without running it: its level, number and name, its module
constants (the shapes and parameters of its one workload), the family it belongs to, and the
identity of its semantics.

A problem's identity is its file's content. Two files that differ only in the values of their
module-level constants (the 2025 enlargement of the shapes) or in how ``get_inputs()`` draws its
tensors (randn, rand, rand_mix) compute the same thing on other inputs: one operation, two
workloads (the recipe is part of the workload). Two files that differ anywhere else (the model, its
construction) are two operations, whatever their names say. Docstrings and comments are documentation and never
part of the identity. The file is parsed, never executed here.
"""

from __future__ import annotations

import ast
import hashlib
import operator
import re
from dataclasses import dataclass, field
from typing import Any

_BINARY: dict[type, Any] = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
                            ast.FloorDiv: operator.floordiv, ast.Div: operator.truediv, ast.Pow: operator.pow,
                            ast.Mod: operator.mod}
_AXIS_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
FILE_NAME = re.compile(r"^(?P<number>\d+)_(?P<name>.+)\.py$")

# Level 1 families by the words of the problem's name, first match wins (level 2 problems are fused
# patterns, level 3 whole architectures).
_LEVEL1_FAMILIES: tuple[tuple[str, str], ...] = (
    (r"scalar_multiplication", "elementwise"),
    (r"conv", "conv"),
    (r"attention", "attention"),
    (r"loss", "loss"),
    (r"pool", "pooling"),
    (r"norm", "normalization"),
    (r"cumsum|cumprod", "scan"),
    (r"reduction|argmax|argmin", "reduction"),
    (r"matmul|matrix|multiplication", "gemm"),
    (r"relu|sigmoid|tanh|swish|gelu|selu|softplus|softsign|elu|softmax", "activation"),
)
LEVEL_FAMILIES = {2: "fused-pattern", 3: "architecture"}


class ProblemFileError(ValueError):
    """The file is not a KernelBench problem this importer can read; the message says why."""


@dataclass(frozen=True)
class ProblemFile:
    level: int
    number: int
    name: str  # as the file names it, e.g. "Square_matrix_multiplication_"
    file: str  # "level1/1_Square_matrix_multiplication_.py"
    digest: str  # sha256 of the file's bytes: the identity of the problem
    semantics: str  # sha256 of the file with its constants' values and its docs left out
    axes: dict[str, int] = field(default_factory=dict)  # integer module constants
    params: dict[str, int | float | str | bool] = field(default_factory=dict)  # other module constants
    input_recipe: str = ""  # get_inputs() as written (the distribution the inputs are drawn from)

    @property
    def family(self) -> str:
        return family_of(self.level, self.name)

    @property
    def words(self) -> str:
        return " ".join(w for w in re.split(r"[_\s]+", self.name) if w)

    @property
    def ref(self) -> str:
        """"1/19": how KernelBench's own papers and leaderboards name a problem."""
        return f"{self.level}/{self.number}"


def family_of(level: int, name: str) -> str:
    if level in LEVEL_FAMILIES:
        return LEVEL_FAMILIES[level]
    lowered = name.lower()
    return next((family for pattern, family in _LEVEL1_FAMILIES if re.search(pattern, lowered)), "other")


def _value(node: ast.expr, known: dict[str, Any]) -> Any:
    """A constant expression of literals and earlier constants; raises ValueError otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float | str | bool):
        return node.value
    if isinstance(node, ast.Name) and node.id in known:
        return known[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_value(node.operand, known)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_value(node.left, known), _value(node.right, known))
    if isinstance(node, ast.Tuple | ast.List):
        return tuple(_value(e, known) for e in node.elts)
    raise ValueError("not a constant")


def _strip_docstrings(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            body.pop(0)


def _constants(tree: ast.Module) -> tuple[dict[str, Any], list[ast.stmt]]:
    """Module-level ``NAME = constant expression`` assignments (in order), and the other statements."""
    known: dict[str, Any] = {}
    rest: list[ast.stmt] = []
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name):
            try:
                known[statement.targets[0].id] = _value(statement.value, known)
                continue
            except (ValueError, TypeError, ZeroDivisionError):
                pass
        rest.append(statement)
    return known, rest


def _split(constants: dict[str, Any]) -> tuple[dict[str, int], dict[str, int | float | str | bool]]:
    # Axes are sizes (at least 1) named as every axis of the catalog (lower case: "N" is axis "n"); a zero
    # padding, a negative dim or a name that would collide is a parameter under its own name.
    sizes = {k: v for k, v in constants.items() if isinstance(v, int) and not isinstance(v, bool) and v >= 1}
    lowered = [k.lower() for k in sizes]
    axes = {k.lower(): v for k, v in sizes.items() if _AXIS_NAME.match(k.lower()) and lowered.count(k.lower()) == 1}
    named = {k for k in sizes if k.lower() in axes}
    params: dict[str, int | float | str | bool] = {}
    for name, value in constants.items():
        if name in named:
            continue
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
            params[name] = value  # e.g. "scale = 2.0": kept a float, as the file writes it
        elif isinstance(value, int | float | str | bool):
            params[name] = value
        else:
            params[name] = repr(value)  # a tuple such as kernel_size = (3, 5)
    return axes, params


def problem_of(file: str, source: str) -> ProblemFile:
    """``file``: the path inside the problem set, e.g. ``level1/19_ReLU.py``."""
    folder, _, base = file.rpartition("/")
    match = FILE_NAME.match(base)
    if not folder.startswith("level") or not folder[5:].isdigit() or not match:
        raise ProblemFileError(f"{file}: not a problem file (expected levelN/<number>_<Name>.py)")
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ProblemFileError(f"{file}: does not parse as Python ({exc.msg}, line {exc.lineno})") from None
    _strip_docstrings(tree)
    constants, rest = _constants(tree)
    recipe = next((ast.unparse(s) for s in rest if isinstance(s, ast.FunctionDef) and s.name == "get_inputs"), "")
    model = [s for s in rest if not (isinstance(s, ast.FunctionDef) and s.name == "get_inputs")]
    shape_free = ast.dump(ast.Module(body=model, type_ignores=[]), annotate_fields=False)
    # The problem's place is part of it: two problems of identical code (1/2 and 1/8 are both a matmul
    # module) stay two operations, each reachable as the problem it is.
    place = f"{folder}/{match['number']}"
    semantics = hashlib.sha256((place + "\n" + " ".join(sorted(constants)) + "\n" + shape_free).encode()).hexdigest()
    axes, params = _split(constants)
    return ProblemFile(
        level=int(folder[5:]), number=int(match["number"]), name=match["name"], file=file,
        digest="sha256:" + hashlib.sha256(source.encode()).hexdigest(), semantics=semantics, axes=axes,
        params=params, input_recipe=recipe,
    )
