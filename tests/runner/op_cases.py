"""Tiny workload cases for the operations of ``kernelindex.runner.ops`` (built like the Liger importer
builds real ones: declared dtypes, contiguous strides, workload params) and the checks shared by
their tests: inputs honour the case, the reference agrees with an implementation in value and gradient."""

from __future__ import annotations

from math import prod
from typing import Any

import torch
from pydantic import BaseModel

from kernelindex import registry
from kernelindex.domain.expressions import evaluate
from kernelindex.domain.manifests import build, digest_of
from kernelindex.domain.specs import contiguous_strides
from kernelindex.policy.traffic import resolved_axes
from kernelindex.runner.correctness import relative_error, tolerance_for
from kernelindex.runner.definitions import OperationDef
from kernelindex.runner.ops import operations
from kernelindex.runner.ops._common import DTYPES, PARAM_PREFIX


def case(slug: str, axes: dict[str, int], dtype: str, params: dict[str, Any] | None = None) -> BaseModel:
    operation = registry.load_operation(slug)
    spec = operation.model_dump(mode="json")["spec"]
    full = resolved_axes(spec, {"axes": axes})
    variables = {name: dtype for name in spec["dtype_variables"]}
    tensors = []
    for decl in spec["inputs"] + spec["outputs"]:
        shape = [evaluate(d, full) for d in decl["shape"]]
        tensors.append({"name": decl["name"], "dtype": variables.get(decl["dtype"], decl["dtype"]), "shape": shape,
                        "strides": contiguous_strides(shape)})
    assert all(prod(t["shape"]) > 0 for t in tensors if t["shape"])
    return build("WorkloadCase", {"operation": digest_of(operation), "axes": axes, "dtypes": variables,
                                  "tensors": tensors, "params": params or {}})


def _fp32(workload: BaseModel) -> BaseModel:
    """The workload's spec with float64 dtypes read as float32 (tolerances exist for fp32, not fp64)."""
    return workload.spec.model_copy(update={"dtypes": {k: "fp32" if v == "fp64" else v
                                                       for k, v in workload.spec.dtypes.items()}})


def op(slug: str) -> OperationDef:
    return operations()[slug]


def fresh_inputs(slug: str, workload: BaseModel, seed: int = 1, device: str = "cpu") -> dict[str, torch.Tensor]:
    gen = torch.Generator(device=device).manual_seed(seed)
    return op(slug).make_inputs(workload, gen, torch.device(device))


def tensor_inputs(inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The operation's inputs, without the workload parameters carried beside them (``param:<name>``)."""
    return {name: t for name, t in inputs.items() if not name.startswith(PARAM_PREFIX)}


def assert_inputs_honour_case(slug: str, workload: BaseModel) -> dict[str, torch.Tensor]:
    inputs = tensor_inputs(fresh_inputs(slug, workload))
    operation = registry.load_operation(slug)
    decls = {t.name: t for t in workload.spec.tensors}
    assert sorted(inputs) == sorted(t.name for t in operation.spec.inputs)
    for name, tensor in inputs.items():
        decl = decls[name]
        assert tuple(tensor.shape) == tuple(decl.shape), name
        assert tensor.stride() == tuple(decl.strides), name
        assert tensor.dtype == DTYPES[decl.dtype], name
        if tensor.is_floating_point():
            assert bool(torch.isfinite(tensor).all()), name
            assert tensor.double().abs().sum() > 0, f"{name} is all zeros"
    assert not torch.equal(inputs[next(iter(inputs))], fresh_inputs(slug, workload, seed=2)[next(iter(inputs))])
    return inputs


def baseline_outputs(slug: str, inputs: dict[str, torch.Tensor], key: str = "baseline") -> dict[str, torch.Tensor]:
    adapter = next(a for a in op(slug).adapters() if a.key == key)
    adapter.start_case()
    return adapter.binder(adapter, inputs)()


def assert_baseline_matches_reference(
    slug: str, workload: BaseModel, key: str = "baseline", device: str = "cpu"
) -> float:
    """Value and gradients of an implementation against the float64 reference on the same inputs."""
    definition = op(slug)
    inputs = fresh_inputs(slug, workload, device=device)
    grads = definition.grads_of(inputs)
    leaves = {n: t.detach().clone().requires_grad_(n in grads) for n, t in inputs.items()}
    reference_leaves = {n: t.detach().clone().requires_grad_(n in grads) for n, t in inputs.items()}
    outputs = baseline_outputs(slug, leaves, key)
    expected = definition.reference(reference_leaves)
    operation = registry.load_operation(slug)
    # float64 cases compare tightly, unless an output is declared in a lower precision (a float32 loss)
    all_fp64 = all(t.dtype in ("fp64", "int64", "int32", "bool") for t in workload.spec.tensors)
    tol = 1e-9 if all_fp64 else tolerance_for(operation, workload.model_copy(update={"spec": _fp32(workload)}))
    worst = 0.0
    for name, ref in expected.items():
        error = relative_error(outputs[name].detach(), ref.detach())
        assert error <= tol, f"{slug} {key}: output {name} relative error {error:.3g} > {tol:.3g}"
        worst = max(worst, error)
    gen = torch.Generator(device=device).manual_seed(5)
    upstream = {n: torch.randn(r.shape, dtype=torch.float64, generator=gen, device=device) for n, r in expected.items()}
    sum((outputs[n].double() * upstream[n]).sum() for n in outputs).backward()
    sum((expected[n] * upstream[n]).sum() for n in expected).backward()
    for name in grads:
        got, want = leaves[name].grad, reference_leaves[name].grad
        assert got is not None and want is not None, f"{slug} {key}: no gradient for {name}"
        error = relative_error(got, want.double())
        assert error <= tol, f"{slug} {key}: gradient of {name} relative error {error:.3g} > {tol:.3g}"
        worst = max(worst, error)
    return worst


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
                        "shape": shape, "strides": contiguous_strides(shape, (orders or {}).get(decl["name"]))})
    assert all(prod(t["shape"]) > 0 for t in tensors)
    return build("WorkloadCase", {"operation": digest_of(operation), "axes": axes, "dtypes": {"T": dtype},
                                  "tensors": tensors})


ROPE_ORDER = {"q": [0, 2, 1, 3], "k": [0, 2, 1, 3], "q_out": [0, 2, 1, 3], "k_out": [0, 2, 1, 3]}


def verified_alone(slug: str, axes: dict[str, int], adapter: Any, device: Any) -> Any:
    """``verify_operation`` of one adapter on one case of ``slug`` with a quick timing policy on a fake GPU
    (``device``, e.g. ``runner_fakes.FakeDevice``): the one outcome, which must have passed."""
    from kernelindex.runner.campaign import verify_operation
    from kernelindex.runner.timing import TimingPolicy

    policy = TimingPolicy(warmup_calls=2, warmup_time_ns=10_000, min_samples=100, target_rse=0.01,
                          time_budget_ns=100_000_000, host_calls=5)
    environment = build("ExecutionEnvironment", {"hardware": {"vendor": "NVIDIA", "product": "Fake GPU"}})
    runner = {"name": "test", "key_id": "sha256:" + "0" * 64}
    result = verify_operation(registry.load_operation(slug), [case(slug, axes, "")], None, device=device,
                              environment=environment, runner=runner, policy=policy, calls_per_sample=10,
                              campaign="test", adapters=[adapter])
    [outcome] = result.cases[0].impls
    assert outcome.status == "passed", outcome.error
    return outcome
