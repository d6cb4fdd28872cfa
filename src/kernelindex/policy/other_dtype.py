"""The one rule for showing another operation's evidence beside an operation: **same shape, other dtype**.

An operation is its semantics *and* its dtypes, so FlashInfer-Bench's fp16 ``gemm-n4096-k4096`` and aiter's
bf16 ``gemm-bf16-n4096-k4096`` are two operations, and their runs never share a cohort, a ranking, a record or
a ratio. A reader comparing GPUs still wants to see them together. Two operations are shown side by side —
each with its own cohorts and floors, in a section that names the dtypes — only when both hold:

1. a reviewed relation names the pair (``registry/relations.yaml``: a person read both definitions and wrote
   why they compute the same thing), and
2. their specs agree on everything but dtypes (``same_shape_other_dtype``): family, axes (names, roles,
   constant sizes), and the tensors (names, order, symbolic shapes, layouts, roles, gathered rows), with at
   least one tensor in another dtype. A reviewed pair whose specs drift apart is not shown.

Pages, their JSON twins and the answer cache's scope all ask this module.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kernelindex.domain.manifests import OperationSpec
from kernelindex.domain.specs import TensorDecl

_FIELD = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class RelationRule:
    """A reviewed pattern pair: ``gemm-n{n}-k{k}`` ↔ ``gemm-bf16-n{n}-k{k}`` (fields are integers)."""

    here: str
    there: str
    why: str


@dataclass(frozen=True)
class OtherDtype:
    """``there`` computes what ``here`` computes on the same shapes, in other dtypes (tensor → dtype)."""

    here: str
    there: str
    dtypes_here: dict[str, str]
    dtypes_there: dict[str, str]
    why: str


def _pattern(template: str) -> re.Pattern[str]:
    parts = _FIELD.split(template)
    body = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>[0-9]+)" for i, p in enumerate(parts))
    return re.compile(f"^{body}$")


def counterparts(slug: str, rules: Sequence[RelationRule]) -> list[tuple[str, RelationRule]]:
    """The slugs a reviewed rule pairs with ``slug``, either way round (not yet checked against specs)."""
    found = []
    for rule in rules:
        for mine, other in ((rule.here, rule.there), (rule.there, rule.here)):
            if matched := _pattern(mine).match(slug):
                found.append((other.format(**matched.groupdict()), rule))
    return found


def concrete_dtypes(spec: OperationSpec) -> dict[str, str] | None:
    """Tensor name → dtype, a dtype variable read as its one allowed dtype; None when one allows several
    (the dtype is then the workload's, not the operation's, and no operation-level pair can be judged)."""
    variables = spec.spec.dtype_variables
    found = {}
    for tensor in [*spec.spec.inputs, *spec.spec.outputs]:
        options = variables.get(tensor.dtype)
        if options is not None and len(options) != 1:
            return None
        found[tensor.name] = options[0] if options is not None else tensor.dtype
    return found


def _shape_of(tensor: TensorDecl) -> tuple:
    return (tensor.name, tuple(str(d) for d in tensor.shape), tensor.layout, tensor.gather_rows, tensor.role)


def _axes(spec: OperationSpec) -> dict[str, tuple[str, str | None]]:
    return {name: (axis.role, axis.expression) for name, axis in spec.spec.axes.items()}


def same_shape_other_dtype(here: OperationSpec, there: OperationSpec, rule: RelationRule) -> OtherDtype | None:
    """The relation when ``there`` is ``here`` in other dtypes (everything else equal), else None."""
    a, b = here.spec, there.spec
    axes = _axes(here) == _axes(there)
    tensors = [_shape_of(t) for t in [*a.inputs, *a.outputs]] == [_shape_of(t) for t in [*b.inputs, *b.outputs]]
    outputs = [t.name for t in a.outputs] == [t.name for t in b.outputs]
    dtypes_here, dtypes_there = concrete_dtypes(here), concrete_dtypes(there)
    if not (a.family == b.family and axes and tensors and outputs and dtypes_here and dtypes_there):
        return None
    if dtypes_here == dtypes_there:
        return None  # the same dtypes: then they would be one operation, not a pair
    return OtherDtype(here.metadata.name or "", there.metadata.name or "", dtypes_here, dtypes_there, rule.why)


def dtype_words(relation: OtherDtype) -> str:
    """'fp16 here, bf16 there' (each side's distinct dtypes, inputs and outputs together)."""
    def words(dtypes: dict[str, str]) -> str:
        return "/".join(dict.fromkeys(dtypes.values()))
    return f"{words(relation.dtypes_here)} here, {words(relation.dtypes_there)} there"
