"""Their OperationSpec / WorkloadCase / WorkloadSuite (kernelindex.dev/v1alpha1) → ours.

Identity is ours: the canonical digest of the manifest we build. Nothing is merged by name."""

from __future__ import annotations

from typing import Any

from kernelindex import registry
from kernelindex.domain.dtypes import DTYPE_BYTES
from kernelindex.domain.expressions import ExpressionError, evaluate
from kernelindex.domain.manifests import Manifest, ManifestError, build, digest_of
from kernelindex.domain.numbers import NumberError, parse_integer
from kernelindex.domain.specs import contiguous_strides
from kernelindex.policy.traffic import resolved_axes

DETERMINISM = ("deterministic", "nondeterministic", "unspecified")


class RowSkipped(ValueError):
    """A row the mapping cannot express faithfully; the message is the skip reason."""


def _tensor(decl: dict, where: str) -> dict:
    if "tensor" in decl:
        dtype, shape, role = decl["tensor"].get("dtype"), decl["tensor"].get("shape"), None
    elif "scalar" in decl:
        dtype, shape, role = decl["scalar"].get("dtype"), [], "scalar"
    else:
        raise RowSkipped(f"{where}: {decl.get('name')!r} is neither a tensor nor a scalar")
    if dtype not in DTYPE_BYTES:
        raise RowSkipped(f"{where}: dtype {dtype!r} of {decl.get('name')!r} has no known size")
    if shape is None:
        raise RowSkipped(f"{where}: {decl.get('name')!r} has no shape")
    out = {"name": decl["name"], "dtype": dtype, "shape": shape}
    return {**out, "role": role} if role else out


def _axes(axes: dict, where: str) -> dict:
    mapped = {}
    for name, axis in axes.items():
        role = axis.get("role")
        if role == "constant":
            if not isinstance(axis.get("value"), int):
                raise RowSkipped(f"{where}: constant axis {name!r} has no integer value")
            mapped[name] = {"role": "constant", "expression": str(axis["value"])}
        elif role == "derived":
            mapped[name] = {"role": "derived", "expression": axis["expression"]}
        elif role == "variable":
            mapped[name] = {"role": "variable"}
        else:
            raise RowSkipped(f"{where}: axis {name!r} has unknown role {role!r}")
    return mapped


def _paged_caches_are_gathers(body: dict) -> None:
    """A paged KV cache is read only through its page table: floor-v1 counts the indexed pages
    (num_kv_indices), not the whole pool (num_pages), so the floor stays a lower bound."""
    if "num_kv_indices" not in body["axes"]:
        return
    for decl in body["inputs"]:
        if decl["shape"][:1] == ["num_pages"]:
            decl["gather_rows"] = "num_kv_indices"


def map_operation(row: dict, aliases: list[str], source_title: str) -> Manifest:
    manifest = row["manifest"]
    spec, meta = manifest["spec"], manifest.get("metadata", {})
    where = f"operation {row['slug']}"
    semantics = spec.get("semantics") or {}
    determinism = semantics.get("determinism", "unspecified")
    body: dict[str, Any] = {
        "family": row["family"],
        "semantics": meta.get("description") or row.get("name") or row["slug"],
        "axes": _axes(spec.get("axes") or {}, where),
        "inputs": [_tensor(d, where) for d in spec.get("inputs") or []],
        "outputs": [_tensor(d, where) for d in spec.get("outputs") or []],
        "determinism": determinism if determinism in DETERMINISM else "unspecified",
        "reference": f"{source_title}'s reference implementation of {row.get('name') or row['slug']} "
        "(not mirrored here)",
    }
    if not body["outputs"]:
        raise RowSkipped(f"{where}: declares no output")
    _paged_caches_are_gathers(body)
    # Only the rules the importer always wrote (in_spec): they are part of the digests that signed runs
    # reference. Floors read every rule at estimation time (registry.floor_flops), so a rule added later
    # (gqa-ragged's) reaches the floor without changing an imported operation's identity.
    rule = registry.flop_rule(row["family"], row["slug"], set(body["axes"]))
    if rule and rule.in_spec:
        body["flops"] = rule.flops
        body["constraints"] = [f"flops: {rule.why} (KernelIndex registry, floors.yaml)"]
    links = {f"source {i + 1}": ref["url"] for i, ref in enumerate(meta.get("sourceRefs") or []) if ref.get("url")}
    metadata = {
        "name": row["slug"],
        "title": meta.get("title") or row.get("name") or row["slug"],
        "description": meta.get("description"),
        "aliases": sorted({a for a in [row.get("name"), *aliases] if a}),
        "labels": {"imported_from": "kernelindex-export"},
        "links": links,
    }
    try:
        return build("OperationSpec", body, {k: v for k, v in metadata.items() if v})
    except ManifestError as exc:
        raise RowSkipped(str(exc)) from None


def _split_axes(values: dict) -> tuple[dict[str, int], dict[str, Any]]:
    axes = {k: v for k, v in values.items() if isinstance(v, int) and not isinstance(v, bool)}
    params = {k: v for k, v in values.items() if k not in axes and isinstance(v, int | float | str | bool)}
    return axes, params


def map_workload(row: dict, operation: Manifest) -> Manifest:
    """A WorkloadCase: their axes and input shapes, plus every output's shape from the operation's
    shape expressions, so floor-v1 can count the writes."""
    spec = row["manifest"]["spec"]
    op = operation.model_dump(mode="json")["spec"]
    axes, params = _split_axes(spec.get("axes") or {})
    try:
        for name, axis in op["axes"].items():
            if axis["role"] == "constant":
                axes.setdefault(name, parse_integer(str(axis["expression"]), f"constant axis {name}"))
        bound = resolved_axes(op, {"axes": axes})
    except (ExpressionError, NumberError) as exc:
        raise RowSkipped(f"workload {row['id']}: {exc}") from None
    given = spec.get("tensors") or {}
    tensors = []
    for decl in op["inputs"] + op["outputs"]:
        shape = (given.get(decl["name"]) or {}).get("shape")
        if shape is None:
            try:
                shape = [evaluate(d, bound) for d in decl["shape"]]
            except ExpressionError as exc:
                raise RowSkipped(f"no floor possible: the shape of {decl['name']!r} cannot be bound ({exc})") from None
        tensors.append({"name": decl["name"], "dtype": decl["dtype"], "shape": shape,
                        "strides": contiguous_strides(shape)})
    label = " · ".join(f"{k} = {v}" for k, v in (spec.get("axes") or {}).items())
    try:
        return build(
            "WorkloadCase",
            {"operation": digest_of(operation), "axes": axes, "dtypes": {}, "tensors": tensors, "params": params},
            {"title": label or row["manifest"].get("metadata", {}).get("title")},
        )
    except ManifestError as exc:
        raise RowSkipped(str(exc)) from None


def map_suite(row: dict, operation: Manifest) -> Manifest:
    spec = row["manifest"]["spec"]
    meta = row["manifest"].get("metadata", {})
    cases = [{"axes": c.get("axes") or {}, "external_id": c.get("externalId")} for c in spec.get("cases") or []]
    aggregation = spec.get("aggregation") or {}
    try:
        return build(
            "WorkloadSuite",
            {
                "operation": digest_of(operation),
                "cases": cases,
                "aggregation": {"metric": aggregation.get("metric", "score"),
                                "statistic": aggregation.get("statistic", "unspecified")},
            },
            {"name": meta.get("name"), "title": meta.get("title") or f"suite of {len(cases)} cases"},
        )
    except ManifestError as exc:
        raise RowSkipped(str(exc)) from None
