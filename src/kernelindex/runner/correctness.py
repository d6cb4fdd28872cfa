"""Correctness before timing: outputs, and gradients where a backward region is timed.

Every check draws fresh random inputs, poisons the allocator where the outputs will land,
snapshots the inputs, calls the implementation once and compares each output with the float64
reference computed from the snapshot: relative error ‖out − ref‖ / ‖ref‖ under the operation's
tolerance; NaN or Inf never passes; an output whose norm is a tiny fraction of the reference's
(zeros, an unwritten buffer) fails; inputs that changed are recorded and must be allowed by the
implementation's in-place declaration and the operation's ``may_alias``.

The inputs in the operation's ``grad_inputs`` require grad and the call runs with autograd
recording (as the forward region times it). With ``gradients``, autograd then gives the
implementation's gradient of each of them for the region's upstream gradient (1.0 for a loss, a fixed
random one otherwise: ``upstream_gradients``), float64 autograd through the reference gives the
expected one, and each gradient is compared like an output. A
missing or wrong gradient fails the gradient verdict (``gradient_passed``), which the backward
regions need; the forward verdict (``passed``) stands on the outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from kernelindex.domain.manifests import OperationSpec, WorkloadCase
from kernelindex.domain.specs import ConcreteTensor
from kernelindex.runner.definitions import Binder, OperationDef, Tensors
from kernelindex.runner.inputs import make_inputs, output_names, output_nbytes, tensor_decls, torch_dtype

TRIVIAL_NORM_RATIO = 1e-3
UPSTREAM_SEED = 424_242
# A gradient sums over what its input fed (rows of a gather, a reduction axis): the order of that
# sum is the implementation's, so an exact forward tolerance (embedding: 0) cannot apply to it. The
# gradient tolerance is the operation's, but at least this per dtype.
GRADIENT_TOLERANCE_FLOOR = {"bf16": 0.02, "fp16": 0.005, "fp32": 1e-5, "fp64": 1e-12}


def gradient_tolerance(operation: OperationSpec, workload: WorkloadCase) -> float:
    floor = max(GRADIENT_TOLERANCE_FLOOR.get(d, 0.0) for d in workload.spec.dtypes.values())
    return max(tolerance_for(operation, workload), floor)


@dataclass
class CheckResult:
    passed: bool
    relative_error: float | None = None
    tolerance: float | None = None
    mutated_inputs: list[str] = field(default_factory=list)
    detail: str = ""
    trials: int = 0
    gradient_error: float | None = None  # worst relative error over the gradients, when checked
    gradient_passed: bool | None = None  # None: gradients not checked
    gradient_detail: str = ""
    gradient_names: tuple[str, ...] = ()  # the inputs whose gradients were checked

    def passed_for(self, region: str) -> bool:
        return self.passed if region == "forward" else bool(self.passed and self.gradient_passed)

    def detail_for(self, region: str) -> str:
        if region != "forward" and self.passed and not self.gradient_passed:
            return self.gradient_detail or "gradients not checked"
        return self.detail


def allowed_mutations(operation: OperationSpec, in_place: bool, overwrites: tuple[str, ...] = ()) -> set[str]:
    """Inputs an in-place implementation may change: those an output may alias, and those the operation
    lets it overwrite (``OperationDef.overwrites``: Liger's cross-entropy writes the logits' gradient)."""
    return {alias.input for alias in operation.spec.may_alias} | set(overwrites) if in_place else set()


# Definitions imported from another index (FlashInfer-Bench's GEMM and attention) state no tolerance and
# bind no dtype variables: the runner holds them to these relative errors, the largest over the dtypes of
# their floating-point outputs (the same figures as the gradient floor above).
UNSTATED_TOLERANCE = GRADIENT_TOLERANCE_FLOOR


def tolerance_for(operation: OperationSpec, workload: WorkloadCase) -> float:
    if not operation.spec.tolerance:
        outputs = {t.name for t in operation.spec.outputs}
        dtypes = {t.dtype for t in workload.spec.tensors if t.name in outputs and t.dtype in UNSTATED_TOLERANCE}
        if dtypes:
            return max(UNSTATED_TOLERANCE[d] for d in dtypes)
    dtypes = set(workload.spec.dtypes.values())
    tolerances = operation.spec.tolerance
    missing = sorted(d for d in dtypes if d not in tolerances)
    if missing:
        raise ValueError(f"operation {operation.metadata.name}: no tolerance for dtype {', '.join(missing)}")
    return max(tolerances[d] for d in dtypes)


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    ref_norm = torch.linalg.vector_norm(ref).item()
    diff = torch.linalg.vector_norm(out.double() - ref).item()
    return diff / ref_norm if ref_norm > 0 else diff


def compare(name: str, out: object, ref: torch.Tensor, shape: tuple[int, ...], dtype: torch.dtype,
            tol: float) -> tuple[float, str]:
    """(relative error, problem): the problem is empty when ``out`` passes."""
    if not isinstance(out, torch.Tensor):
        return float("inf"), f"{name} is not a tensor"
    if tuple(out.shape) != shape:
        return float("inf"), f"{name} has shape {tuple(out.shape)}, expected {shape}"
    if out.dtype != dtype:
        return float("inf"), f"{name} has dtype {out.dtype}, expected {dtype}"
    out = out.detach()
    if out.is_floating_point() and not bool(torch.isfinite(out).all()):
        bad = int((~torch.isfinite(out)).sum())
        return float("inf"), f"{name} holds {bad} NaN/Inf values (unwritten or broken output)"
    out_norm = torch.linalg.vector_norm(out.double()).item()
    ref_norm = torch.linalg.vector_norm(ref).item()
    if ref_norm > 0 and out_norm < TRIVIAL_NORM_RATIO * ref_norm:
        return float("inf"), f"{name} is trivially small (norm {out_norm:.3g} vs reference {ref_norm:.3g})"
    error = relative_error(out, ref)
    if error > tol:
        return error, f"{name}: relative error {error:.3g} exceeds tolerance {tol:.3g}"
    return error, ""


def upstream_gradients(outputs: Tensors, names: list[str], seed: int) -> Tensors:
    """The upstream gradient of every floating-point output (what backward starts from): 1.0 for a
    zero-dimensional output (a loss: what ``loss.backward()`` sends in training, and the value some
    implementations special-case), a fixed random tensor drawn from ``seed`` for any other output."""
    gen = torch.Generator(device=next(iter(outputs.values())).device)
    gen.manual_seed(seed)
    found = {}
    for name in names:
        out = outputs[name]
        if not out.is_floating_point():
            continue
        if out.dim() == 0:
            found[name] = torch.ones((), device=out.device, dtype=out.dtype)
        else:
            found[name] = torch.randn(out.shape, generator=gen, device=out.device, dtype=torch.float32).to(out.dtype)
    return found


def gradients(outputs: Tensors, upstream: Tensors, wrt: Tensors, *, retain: bool = False) -> list[torch.Tensor | None]:
    """Autograd's gradient of each tensor in ``wrt`` (None where the outputs do not depend on it)."""
    names = [n for n in upstream if outputs[n].requires_grad]
    if not names:
        return [None] * len(wrt)
    return list(torch.autograd.grad([outputs[n] for n in names], list(wrt.values()),
                                    [upstream[n] for n in names], retain_graph=retain, allow_unused=True))


def _reference_gradients(op: OperationDef, snapshot: Tensors, upstream: Tensors) -> Tensors:
    names = op.grads_of(snapshot)
    leaves = {n: t.detach().double().requires_grad_(True) if n in names else t for n, t in snapshot.items()}
    with torch.enable_grad():
        expected = op.reference(leaves)
        wrt = {n: leaves[n] for n in names}
        grads = gradients(expected, {n: g.double() for n, g in upstream.items()}, wrt)
    return {n: g for n, g in zip(wrt, grads, strict=True) if g is not None}


def _check_gradients(op: OperationDef, inputs: Tensors, snapshot: Tensors, outputs: Tensors,
                     decls: dict[str, ConcreteTensor], tol: float, seed: int) -> tuple[float, str]:
    upstream = upstream_gradients(outputs, list(outputs), seed)
    expected = _reference_gradients(op, snapshot, upstream)
    wrt = {n: inputs[n] for n in op.grads_of(inputs)}
    got = gradients(outputs, {n: g.clone() for n, g in upstream.items()}, wrt)
    worst = 0.0
    for name, grad in zip(wrt, got, strict=True):
        label = f"gradient of {name}"
        if grad is None or name not in expected:
            return float("inf"), f"{label}: the implementation produced none"
        decl = decls.get(name)  # an optional input outside the spec (dyt's beta): its own shape and dtype
        shape, dtype = (tuple(decl.shape), torch_dtype(decl.dtype)) if decl else (tuple(wrt[name].shape),
                                                                                    wrt[name].dtype)
        error, problem = compare(label, grad, expected[name], shape, dtype, tol)
        if problem:
            return error, problem
        worst = max(worst, error)
    return worst, ""


def check_once(
    operation: OperationSpec, workload: WorkloadCase, op: OperationDef, bind: Binder, *, in_place: bool, seed: int,
    device: torch.device | str, poison: Callable[[list[int]], None] | None, gradients: bool = False,
) -> CheckResult:
    tol = tolerance_for(operation, workload)
    inputs = make_inputs(op, workload, seed, device)
    snapshot = {name: tensor.detach().clone() for name, tensor in inputs.items()}
    for name in op.grads_of(inputs):
        inputs[name].requires_grad_(True)
    with torch.no_grad():
        expected = op.reference(snapshot)
    call = bind(inputs)
    if poison is not None:
        poison(output_nbytes(operation, workload))
    with torch.enable_grad() if op.grad_inputs else torch.no_grad():
        outputs = call()
    mutated = sorted(name for name in inputs if not torch.equal(inputs[name].detach(), snapshot[name]))
    result = CheckResult(passed=True, tolerance=tol, mutated_inputs=mutated, trials=1)
    forbidden = sorted(set(mutated) - allowed_mutations(operation, in_place, op.overwrites))
    if forbidden:
        declared = "declared in place" if in_place else "declared read-only inputs"
        result.passed = False
        result.detail = f"mutated input {', '.join(forbidden)} ({declared}; not allowed)"
    decls = tensor_decls(workload)
    worst = 0.0
    for name in output_names(operation):
        if not isinstance(outputs, dict) or name not in outputs:
            return CheckResult(False, None, tol, mutated, f"no output named {name}", 1)
        decl = decls[name]
        error, problem = compare(f"output {name}", outputs[name], expected[name], tuple(decl.shape),
                                 torch_dtype(decl.dtype), tol)
        worst = max(worst, error)
        if problem and result.passed:
            result.passed, result.detail = False, problem
    result.relative_error = worst if worst != float("inf") else None
    if gradients and result.passed:
        error, problem = _check_gradients(op, inputs, snapshot, outputs, decls,
                                          gradient_tolerance(operation, workload), seed + UPSTREAM_SEED)
        result.gradient_error = error if error != float("inf") else None
        result.gradient_passed, result.gradient_detail = not problem, problem
        result.gradient_names = op.grads_of(inputs)
    return result


def check(
    operation: OperationSpec, workload: WorkloadCase, op: OperationDef, bind: Binder, *, in_place: bool,
    device: torch.device | str, trials: int = 3, base_seed: int = 0,
    poison: Callable[[list[int]], None] | None = None, gradients: bool = False,
) -> CheckResult:
    """Run ``trials`` checks with fresh inputs. The first failing output decides; a failing gradient
    decides the gradient verdict and stops the gradient comparisons. Errors are the worst seen."""
    worst, worst_grad = 0.0, 0.0
    mutated: set[str] = set()
    gradient_failure = ""
    checked: tuple[str, ...] = ()
    for trial in range(trials):
        last = check_once(operation, workload, op, bind, in_place=in_place, seed=base_seed + 7919 * trial + 1,
                          device=device, poison=poison, gradients=gradients and not gradient_failure)
        mutated.update(last.mutated_inputs)
        if not last.passed:
            last.detail = f"check {trial + 1} of {trials}: {last.detail}"
            last.trials = trial + 1
            last.mutated_inputs = sorted(mutated)
            last.gradient_passed = False if gradients else None
            return last
        worst = max(worst, last.relative_error or 0.0)
        worst_grad = max(worst_grad, last.gradient_error or 0.0)
        checked = last.gradient_names or checked
        if last.gradient_passed is False and not gradient_failure:
            gradient_failure = f"check {trial + 1} of {trials}: {last.gradient_detail}"
    detail = f"{trials} checks with fresh random inputs passed"
    if gradients and not gradient_failure:
        detail += f" (outputs and the gradients of {', '.join(checked)})"
    if in_place:
        wrote = ", ".join(sorted(mutated)) or "no input"
        detail += f"; declared in place, wrote {wrote} in place"
    result = CheckResult(True, worst, tolerance_for(operation, workload), sorted(mutated), detail, trials)
    if gradients:
        result.gradient_passed = not gradient_failure
        result.gradient_error = worst_grad
        result.gradient_detail = gradient_failure
    return result
