"""Helpers for the runner tests: small workload cases and a fake device with a fake clock."""

from __future__ import annotations

from math import prod

import pytest
from pydantic import BaseModel
from runner_fakes import FakeDevice

from kernelindex import registry
from kernelindex.domain.expressions import evaluate
from kernelindex.domain.manifests import build, digest_of
from kernelindex.policy.floor import resolved_axes


def _strides(shape: list[int], order: list[int] | None) -> list[int]:
    order = order or list(range(len(shape)))
    strides, step = [0] * len(shape), 1
    for dim in reversed(order):
        strides[dim] = step
        step *= shape[dim]
    return strides


def small_workload(
    slug: str, axes: dict[str, int], dtype: str, orders: dict[str, list[int]] | None = None
) -> BaseModel:
    operation = registry.load_operation(slug)
    spec = operation.model_dump(mode="json")["spec"]
    full = resolved_axes(spec, {"axes": axes})
    tensors = []
    for decl in spec["inputs"] + spec["outputs"]:
        shape = [evaluate(d, full) for d in decl["shape"]]
        fixed = decl["dtype"] not in spec.get("dtype_variables", {})
        tensors.append({"name": decl["name"], "dtype": decl["dtype"] if fixed else dtype,
                        "shape": shape, "strides": _strides(shape, (orders or {}).get(decl["name"]))})
    assert all(prod(t["shape"]) > 0 for t in tensors)
    return build("WorkloadCase", {"operation": digest_of(operation), "axes": axes, "dtypes": {"T": dtype},
                                  "tensors": tensors})


ROPE_ORDER = {"q": [0, 2, 1, 3], "k": [0, 2, 1, 3], "q_out": [0, 2, 1, 3], "k_out": [0, 2, 1, 3]}


@pytest.fixture
def rope_case() -> BaseModel:
    return small_workload("rope", {"seq": 16, "hidden": 64, "q_heads": 4, "kv_heads": 2}, "fp32", ROPE_ORDER)


@pytest.fixture
def rope_bf16_case() -> BaseModel:
    return small_workload("rope", {"seq": 16, "hidden": 64, "q_heads": 4, "kv_heads": 2}, "bf16", ROPE_ORDER)


@pytest.fixture
def embedding_case() -> BaseModel:
    return small_workload("embedding", {"batch": 2, "seq": 8, "vocab": 32, "hidden": 16}, "fp32")


@pytest.fixture
def fake_device() -> FakeDevice:
    return FakeDevice()
