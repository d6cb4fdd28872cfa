"""What a measurement request may ask for, decided against the operation spec (pure).

A request names an operation, a binding of every variable axis, the dtype variables, one GPU
product from the datasheet table, the timed regions, optionally the implementations, and how many
independent runner identities should measure it (``replicas``). An impossible shape is refused
naming the axis: a missing or unknown axis, a size that is not a positive integer, a derived axis
that does not divide exactly, or a violated constraint of the spec ("hidden divisible by q_heads").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from math import prod
from typing import Any

from kernelindex.domain.canonical import sha256_digest
from kernelindex.domain.expressions import evaluate
from kernelindex.domain.specs import contiguous_strides

REGIONS = ("forward", "backward", "forward+backward")
MAX_REPLICAS = 3
MAX_AXIS = 2**31 - 1
MAX_ELEMENTS = 2**34  # a request for tensors beyond 16 Gi elements cannot fit any GPU we index
_DIVISIBLE = re.compile(r"^(\w+(?: and \w+)*) divisible by (\w+)$")
_PARITY = re.compile(r"^(\w+) (even|odd)$")


@dataclass
class RequestProblem:
    field: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"field": self.field, "in": "body", "message": self.message}


class InvalidRequest(ValueError):
    def __init__(self, problems: list[RequestProblem]) -> None:
        super().__init__("; ".join(f"{p.field}: {p.message}" for p in problems))
        self.problems = problems


@dataclass(frozen=True)
class RequestSpec:
    """A validated request; ``digest`` is its identity (identical open requests merge on it)."""

    operation: str
    axes: dict[str, int]
    dtypes: dict[str, str]
    gpu: str
    regions: list[str]
    implementations: list[str] | None
    replicas: int
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"operation": self.operation, "axes": self.axes, "dtypes": self.dtypes, "gpu": self.gpu,
                "regions": self.regions, "implementations": self.implementations, "replicas": self.replicas}

    @property
    def digest(self) -> str:
        return sha256_digest({"kind": "MeasurementRequest", **self.to_json()})


def validate_request(body: dict[str, Any], operation_spec: dict[str, Any], gpu_slugs: set[str]) -> RequestSpec:
    """Check a request body (operation already resolved to its spec); raise InvalidRequest listing every
    problem with the field it concerns."""
    problems: list[RequestProblem] = []
    axes = _check_axes(body.get("axes") or {}, operation_spec, problems)
    dtypes = _check_dtypes(body.get("dtypes") or {}, operation_spec, problems)
    gpu = str(body.get("gpu", ""))
    if gpu not in gpu_slugs:
        problems.append(RequestProblem("gpu", f"{gpu!r} is not a GPU in the datasheet table; one of "
                                              f"{', '.join(sorted(gpu_slugs))}"))
    regions = sorted(set(body.get("regions") or ["forward"]))
    for region in regions:
        if region not in REGIONS:
            problems.append(RequestProblem("regions", f"{region!r} is not a timed region ({', '.join(REGIONS)})"))
    replicas = body.get("replicas", 1)
    if not isinstance(replicas, int) or not 1 <= replicas <= MAX_REPLICAS:
        problems.append(RequestProblem("replicas", f"must be an integer from 1 to {MAX_REPLICAS}"))
    implementations = body.get("implementations")
    if problems:
        raise InvalidRequest(problems)
    impls = sorted(set(implementations)) if implementations else None
    return RequestSpec(str(body["operation"]), axes, dtypes, gpu, regions, impls, int(replicas))


def _check_axes(given: dict[str, Any], spec: dict[str, Any], problems: list[RequestProblem]) -> dict[str, int]:
    variables = [n for n, a in spec["axes"].items() if a["role"] == "variable"]
    for name in sorted(set(given) - set(variables)):
        problems.append(RequestProblem(f"axes.{name}", f"not a variable axis of this operation; its axes are "
                                                       f"{', '.join(variables)}"))
    axes: dict[str, int] = {}
    for name in variables:
        value = given.get(name)
        if value is None:
            problems.append(RequestProblem(f"axes.{name}", "missing: every variable axis needs a size"))
        elif isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_AXIS:
            problems.append(RequestProblem(f"axes.{name}", f"{value!r} is not a positive integer size"))
        else:
            axes[name] = value
    if len(axes) == len(variables) and not problems:
        _check_shape(axes, spec, problems)
    return axes


def _check_shape(axes: dict[str, int], spec: dict[str, Any], problems: list[RequestProblem]) -> None:
    full = dict(axes)
    for name, axis in spec["axes"].items():
        if axis["role"] != "derived":
            continue
        expression = axis["expression"]
        division = re.fullmatch(r"\s*(\w+)\s*//\s*(\w+)\s*", expression)
        if division and axes.get(division.group(1), 0) % max(axes.get(division.group(2), 1), 1):
            a, b = division.groups()
            problems.append(RequestProblem(f"axes.{a}", f"{a}={axes[a]} is not divisible by {b}={axes[b]}, so {name} "
                                                        f"= {expression} is not a whole size"))
            return
        full[name] = evaluate(expression, full)
    for constraint in spec.get("constraints", []):
        for text in constraint.split(";"):
            _check_constraint(text.strip(), full, problems)
    for decl in spec["inputs"] + spec["outputs"]:
        if prod(evaluate(d, full) for d in decl["shape"]) > MAX_ELEMENTS:
            problems.append(RequestProblem("axes", f"tensor {decl['name']} would hold more than {MAX_ELEMENTS:,} "
                                                   "elements"))


def _check_constraint(text: str, axes: dict[str, int], problems: list[RequestProblem]) -> None:
    """The constraint forms the specs use for sizes; others (index ranges, layouts) concern values."""
    if match := _DIVISIBLE.match(text):
        divisor = match.group(2)
        for name in match.group(1).split(" and "):
            if name in axes and divisor in axes and axes[name] % axes[divisor]:
                problems.append(RequestProblem(f"axes.{name}", f"{name}={axes[name]} is not divisible by "
                                                               f"{divisor}={axes[divisor]} ({text})"))
    elif (match := _PARITY.match(text)) and match.group(1) in axes:
        name, parity = match.groups()
        if axes[name] % 2 != (0 if parity == "even" else 1):
            problems.append(RequestProblem(f"axes.{name}", f"{name}={axes[name]} must be {parity} ({text})"))


def _check_dtypes(given: dict[str, Any], spec: dict[str, Any], problems: list[RequestProblem]) -> dict[str, str]:
    variables: dict[str, list[str]] = spec.get("dtype_variables") or {}
    for name in sorted(set(given) - set(variables)):
        problems.append(RequestProblem(f"dtypes.{name}", "not a dtype variable of this operation"))
    dtypes = {}
    for name, allowed in variables.items():
        value = given.get(name)
        if value not in allowed:
            problems.append(RequestProblem(f"dtypes.{name}", f"{value!r} is not one of {', '.join(allowed)}"))
        else:
            dtypes[name] = str(value)
    return dtypes


def workload_spec_for(request: RequestSpec, operation_digest: str, operation_spec: dict[str, Any]) -> dict[str, Any]:
    """A WorkloadCase spec for a binding the catalog has not seen: contiguous tensors."""
    full = dict(request.axes)
    for name, axis in operation_spec["axes"].items():
        if axis["role"] == "derived":
            full[name] = evaluate(axis["expression"], full)
    tensors = []
    for decl in operation_spec["inputs"] + operation_spec["outputs"]:
        shape = [evaluate(d, full) for d in decl["shape"]]
        dtype = request.dtypes.get(decl["dtype"], decl["dtype"])
        tensors.append({"name": decl["name"], "dtype": dtype, "shape": shape, "strides": contiguous_strides(shape)})
    return {"operation": operation_digest, "axes": request.axes, "dtypes": request.dtypes, "tensors": tensors}
