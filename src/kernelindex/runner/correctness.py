"""Correctness before timing.

Every check draws fresh random inputs, poisons the allocator where the outputs will land,
snapshots the inputs, calls the implementation once and compares each output with the float64
reference computed from the snapshot: relative error ‖out − ref‖ / ‖ref‖ under the operation's
tolerance; NaN or Inf never passes; an output whose norm is a tiny fraction of the reference's
(zeros, an unwritten buffer) fails; inputs that changed are recorded and must be allowed by the
implementation's in-place declaration and the operation's ``may_alias``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from pydantic import BaseModel

from kernelindex.runner.inputs import make_inputs, output_names, output_nbytes, torch_dtype

Tensors = dict[str, torch.Tensor]
Bound = Callable[[], Tensors]
Binder = Callable[[Tensors], Bound]
TRIVIAL_NORM_RATIO = 1e-3


@dataclass
class CheckResult:
    passed: bool
    relative_error: float | None = None
    tolerance: float | None = None
    mutated_inputs: list[str] = field(default_factory=list)
    detail: str = ""
    trials: int = 0


def allowed_mutations(operation: BaseModel, in_place: bool) -> set[str]:
    return {alias.input for alias in operation.spec.may_alias} if in_place else set()


def tolerance_for(operation: BaseModel, workload: BaseModel) -> float:
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


def _compare_output(name: str, out: object, ref: torch.Tensor, decl: BaseModel, tol: float) -> tuple[float, str]:
    if not isinstance(out, torch.Tensor):
        return float("inf"), f"output {name} is not a tensor"
    if tuple(out.shape) != tuple(decl.shape):
        return float("inf"), f"output {name} has shape {tuple(out.shape)}, expected {tuple(decl.shape)}"
    if out.dtype != torch_dtype(decl.dtype):
        return float("inf"), f"output {name} has dtype {out.dtype}, expected {decl.dtype}"
    if out.is_floating_point() and not bool(torch.isfinite(out).all()):
        bad = int((~torch.isfinite(out)).sum())
        return float("inf"), f"output {name} holds {bad} NaN/Inf values (unwritten or broken output)"
    out_norm = torch.linalg.vector_norm(out.double()).item()
    ref_norm = torch.linalg.vector_norm(ref).item()
    if ref_norm > 0 and out_norm < TRIVIAL_NORM_RATIO * ref_norm:
        return float("inf"), f"output {name} is trivially small (norm {out_norm:.3g} vs reference {ref_norm:.3g})"
    error = relative_error(out, ref)
    if error > tol:
        return error, f"output {name}: relative error {error:.3g} exceeds tolerance {tol:.3g}"
    return error, ""


def check_once(
    operation: BaseModel, workload: BaseModel, bind: Binder, reference: Callable[[Tensors], Tensors],
    *, in_place: bool, seed: int, device: torch.device | str, poison: Callable[[list[int]], None] | None,
) -> CheckResult:
    slug = operation.metadata.name
    tol = tolerance_for(operation, workload)
    inputs = make_inputs(slug, workload, seed, device)
    snapshot = {name: tensor.clone() for name, tensor in inputs.items()}
    expected = reference(snapshot)
    call = bind(inputs)
    if poison is not None:
        poison(output_nbytes(operation, workload))
    outputs = call()
    mutated = sorted(name for name in inputs if not torch.equal(inputs[name], snapshot[name]))
    result = CheckResult(passed=True, tolerance=tol, mutated_inputs=mutated, trials=1)
    forbidden = sorted(set(mutated) - allowed_mutations(operation, in_place))
    if forbidden:
        declared = "declared in place" if in_place else "declared read-only inputs"
        result.passed = False
        result.detail = f"mutated input {', '.join(forbidden)} ({declared}; not allowed)"
    decls = {t.name: t for t in workload.spec.tensors}
    worst = 0.0
    for name in output_names(operation):
        if not isinstance(outputs, dict) or name not in outputs:
            return CheckResult(False, None, tol, mutated, f"no output named {name}", 1)
        error, problem = _compare_output(name, outputs[name], expected[name], decls[name], tol)
        worst = max(worst, error)
        if problem and result.passed:
            result.passed, result.detail = False, problem
    result.relative_error = worst if worst != float("inf") else None
    return result


def check(
    operation: BaseModel, workload: BaseModel, bind: Binder, reference: Callable[[Tensors], Tensors],
    *, in_place: bool, device: torch.device | str, trials: int = 3, base_seed: int = 0,
    poison: Callable[[list[int]], None] | None = None,
) -> CheckResult:
    """Run ``trials`` checks with fresh inputs; the first failure decides, errors are the worst seen."""
    worst: float = 0.0
    mutated: set[str] = set()
    last = CheckResult(passed=True)
    for trial in range(trials):
        last = check_once(operation, workload, bind, reference, in_place=in_place,
                          seed=base_seed + 7919 * trial + 1, device=device, poison=poison)
        mutated.update(last.mutated_inputs)
        if not last.passed:
            last.detail = f"check {trial + 1} of {trials}: {last.detail}"
            last.trials = trial + 1
            last.mutated_inputs = sorted(mutated)
            return last
        worst = max(worst, last.relative_error or 0.0)
    detail = f"{trials} checks with fresh random inputs passed"
    if in_place:
        wrote = ", ".join(sorted(mutated)) or "no input"
        detail += f"; declared in place, wrote {wrote} in place"
    return CheckResult(True, worst, last.tolerance, sorted(mutated), detail, trials)
