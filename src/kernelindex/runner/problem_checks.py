"""Correctness checks of problem modules (``problem_module``): each check draws fresh inputs, computes the
module's float64 execution on them once, checks every implementation's output against it, then frees it.

- The reference is the same module executed in float64 (a twin of the model, ``Case.twin``: built again
  under the case's seed and given its parameters and buffers, cast to float64 with the inputs' floating
  tensors), on the CPU — or first on the GPU where the campaign asks (``reference_device``), then the CPU
  where it does not fit; the run says which. Where the
  module cannot run in float64 (an op without a float64 kernel, a dtype the module forces), the reference
  is its float32 execution on the CPU, and the run says so; the tolerance is then
  ``FP32_REFERENCE_TOLERANCE``.
- One draw, one reference, every implementation: a GPU reference stays on the GPU and the checks of that
  draw follow in the same hold of the GPU lock (a phase each: ``GpuLock.next_phase``), then the draw and its
  reference are freed before the lock goes. So at most one reference is alive at a time, none waits on the
  GPU while another process runs, and none is copied to the host and back (at level 1's sizes that round
  trip, 12.9 GB each way, was most of a problem's hold of the GPU).
- The comparison is in float64 on the output's device, a chunk at a time (``COMPARE_CHUNK``): the relative
  Frobenius error of every output, NaN/Inf and a (nearly) zero output where the reference is not fail.
  Where the reference is negligible against its inputs (``NEGLIGIBLE_REFERENCE``: zero up to float64's
  rounding) the error is the RMS of the difference over the inputs' RMS instead, and the verdict says so;
  dropout that makes the output random in training mode is off for the checks (``problem_randomness``).
- Each implementation is called on its own copy of the draw (the last on the draw itself), so one that
  changes its inputs in place does not change the next one's; one that fails is not checked further, the
  others go on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from kernelindex.runner.gpu_lock import GpuLock
from kernelindex.runner.problem_randomness import dropout_off

FP64_TOLERANCE = 1e-4  # relative Frobenius error of fp32 execution against float64, no TF32 involved
TF32_TOLERANCE = 1e-2  # … where TF32 math is allowed on a CUDA device (cuDNN's default for convolutions)
FP32_REFERENCE_TOLERANCE = 1e-3  # … against a float32 CPU reference, where float64 cannot run
TRIVIAL_NORM_RATIO = 1e-3
COMPARE_CHUNK = 1 << 24  # elements compared at a time (three float64 chunks: 400 MB)
# A float64 reference whose RMS is under this fraction of its inputs' RMS is float64's rounding of a result that
# is zero in exact arithmetic (level 2 problem 23: a mean of group-normalised values, RMS 1.7e-17 against inputs
# of RMS 0.58); float32's own rounding, about 1e-7 of the values it sums, cannot be measured relative to it.
NEGLIGIBLE_REFERENCE = 1e-10


def tensors_of(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, tuple | list):
        return [t for item in value for t in tensors_of(item)]
    return []


def to_device(value: Any, device: str, dtype: torch.dtype | None = None) -> Any:
    if isinstance(value, torch.Tensor):
        floating = value.is_floating_point() and dtype is not None
        return value.to(device=device, dtype=dtype if floating else value.dtype)
    if isinstance(value, tuple | list):
        return type(value)(to_device(v, device, dtype) for v in value)
    return value


def _on_cuda(value: Any) -> bool:
    return any(t.is_cuda for t in tensors_of(value))


class CheckedCase(Protocol):
    """What the checks need of a problem's case (``problem_module.Case``)."""

    device: str
    seed: int
    reference_device: str
    model: torch.nn.Module
    reference_model: torch.nn.Module
    lock: GpuLock
    reference_s: float

    def twin(self) -> torch.nn.Module: ...

    def inputs(self, seed: int) -> list[Any]: ...


@dataclass
class Verdict:
    status: str  # passed | incorrect_numerical | runtime_error
    relative_error: float | None = None
    tolerance: float | None = None
    reference: str = "float64 on the CPU"
    detail: str = ""
    checks: int = 0


def _model64(case: CheckedCase) -> torch.nn.Module:
    """A float64 twin of the model, made on the CPU (outside any hold of the lock)."""
    return case.twin().to(dtype=torch.float64)


def _float64(case: CheckedCase, inputs: list[Any], device: str, model64: torch.nn.Module) -> list[torch.Tensor]:
    """The float64 execution on ``device``, its outputs left there (a CUDA one runs inside the caller's hold,
    a CPU one beside the other workers' GPU phases)."""
    if device == "cpu" and _on_cuda(inputs):
        with case.lock.hold("inputs to the CPU for the reference"):
            inputs = to_device(inputs, "cpu")
    with torch.no_grad():
        out = model64.to(device)(*to_device(inputs, device, torch.float64))
        return [t.detach().to(torch.float64) for t in tensors_of(out)]


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:160]}"


def _cpu_reference(case: CheckedCase, inputs: list[Any]) -> tuple[list[torch.Tensor], str]:
    """Float64 on the CPU; float32 on the CPU only where float64 cannot run at all."""
    try:
        return _float64(case, inputs, "cpu", _model64(case)), "float64 on the CPU"
    except (RuntimeError, TypeError, NotImplementedError) as exc:
        why = _why(exc)
    if _on_cuda(inputs):
        with case.lock.hold("inputs to the CPU for the reference"):
            inputs = to_device(inputs, "cpu")
    with torch.no_grad():
        out = case.twin()(*to_device(inputs, "cpu"))
    return [t.double() for t in tensors_of(out)], f"float32 on the CPU (the module cannot run in float64: {why})"


@dataclass
class _Draw:
    """One check's inputs and their reference, alive for that check only (one reference at a time)."""

    inputs: list[Any]
    want: list[torch.Tensor] = field(default_factory=list)
    reference: str = ""
    scale: float | None = None  # the RMS of the floating inputs (None: there are none, or all are zero)

    def free(self) -> None:
        self.inputs.clear()
        self.want.clear()


def _reference(case: CheckedCase, draw: _Draw) -> bool:
    """Float64 on ``case.reference_device`` (the CPU unless the campaign asks for the GPU), then on the CPU
    (a reference too big for the GPU beside the case, an op without a float64 kernel there), then float32 on
    the CPU. True: it is on the GPU and the lock is still held (``_gpu_reference``)."""
    start = time.perf_counter()
    on_gpu = case.reference_device != "cpu" and _gpu_reference(case, draw)
    if not on_gpu:
        draw.want, draw.reference = _cpu_reference(case, draw.inputs)
    case.reference_s += time.perf_counter() - start
    return on_gpu


def _gpu_reference(case: CheckedCase, draw: _Draw) -> bool:
    """The reference on the GPU, left there with the lock still held, so the checks follow in the same hold:
    it never waits on the GPU while another process runs, nor travels to the host and back. False (the lock
    let go, its memory returned): it could not be made there."""
    try:
        model64 = _model64(case)
    except (RuntimeError, TypeError, NotImplementedError):
        return False
    case.lock.acquire("float64 reference on the GPU")
    try:
        draw.want = _float64(case, draw.inputs, case.reference_device, model64)
        if case.reference_device.startswith("cuda"):
            torch.cuda.synchronize()  # the reference's time is its own phase's, not the first check's
        draw.reference = "float64 on the GPU"
        return True
    except (RuntimeError, TypeError, NotImplementedError):
        pass
    except BaseException:
        case.lock.release()
        raise
    del model64
    case.lock.release()  # synchronises and returns the failed attempt's memory before the CPU takes over
    torch.cuda.empty_cache()
    return False


def tolerance_for(device: str, reference: str) -> float:
    if reference.startswith("float32"):
        return FP32_REFERENCE_TOLERANCE
    tf32 = torch.backends.cuda.matmul.allow_tf32 or torch.backends.cudnn.allow_tf32
    return TF32_TOLERANCE if device.startswith("cuda") and tf32 else FP64_TOLERANCE


def _chunked_norms(g: torch.Tensor, w: torch.Tensor, device: torch.device | str) -> tuple[list[float], bool]:
    """``[||g||, ||w||, ||g - w||]`` in float64 on ``device`` and whether ``g`` is finite, ``COMPARE_CHUNK``
    elements at a time: float64 copies of a whole large output and of its difference would each be as big as
    the reference again."""
    flat_g, flat_w = g.detach().reshape(-1), w.reshape(-1)
    parts, finite = [], []
    for start in range(0, max(flat_g.numel(), 1), COMPARE_CHUNK):
        g64 = flat_g[start:start + COMPARE_CHUNK].to(device, torch.float64)
        w64 = flat_w[start:start + COMPARE_CHUNK].to(device, torch.float64)
        finite.append(torch.isfinite(g64).all())
        parts.append(torch.stack([torch.linalg.vector_norm(t) for t in (g64, w64, g64 - w64)]))
        del g64, w64
    norms = torch.linalg.vector_norm(torch.stack(parts), dim=0).tolist()
    return norms, bool(torch.stack(finite).all())


def _norms(g: torch.Tensor, w: torch.Tensor) -> tuple[list[float], bool]:
    """On the output's device (a GPU compares a large output in milliseconds, under the check's hold), on the
    CPU where even a chunk does not fit beside it."""
    if g.is_cuda:
        try:
            return _chunked_norms(g, w, g.device)
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
    return _chunked_norms(g, w, "cpu")


def _inputs_rms(inputs: list[Any]) -> float | None:
    """The RMS of every floating input element, in float64 a chunk at a time (None: no floating inputs, or zero)."""
    floating = [t.detach().reshape(-1) for t in tensors_of(inputs) if t.is_floating_point() and t.numel()]
    squares = [float(torch.linalg.vector_norm(t[i:i + COMPARE_CHUNK].to(torch.float64))) ** 2
               for t in floating for i in range(0, t.numel(), COMPARE_CHUNK)]
    count = sum(t.numel() for t in floating)
    return (sum(squares) / count) ** 0.5 or None if count else None


def _negligible(w_norm: float, count: int, scale: float | None) -> str:
    """The criterion's note where the reference is negligible against its inputs (``NEGLIGIBLE_REFERENCE``), else ''."""
    rms = w_norm / max(count, 1) ** 0.5
    if scale is None or rms > NEGLIGIBLE_REFERENCE * scale:
        return ""
    return (f"the float64 reference is negligible against its inputs (RMS {rms:.2g}, the inputs' {scale:.3g}), so "
            "the error is the RMS of the difference over the inputs' RMS instead of the relative error")


def _output_error(g: torch.Tensor, w: torch.Tensor, tolerance: float, scale: float | None) -> tuple[float, str, str]:
    """(error, why it fails or '', the criterion's note where it is not the relative error)."""
    if g.shape != w.shape:
        return float("inf"), f"output shape {tuple(g.shape)}, the reference's {tuple(w.shape)}", ""
    (g_norm, w_norm, difference), finite = _norms(g, w)
    if not finite:
        return float("inf"), "NaN or Inf in the output", ""
    relative = difference / (w_norm or 1.0)
    note = _negligible(w_norm, w.numel(), scale) if relative > tolerance else ""
    if note:
        return difference / max(w.numel(), 1) ** 0.5 / (scale or 1.0), "", note
    if w_norm and g_norm < TRIVIAL_NORM_RATIO * w_norm:
        return float("inf"), "the output is (nearly) zero where the reference is not", ""
    return relative, "", ""


def _error(got: list[torch.Tensor], want: list[torch.Tensor], tolerance: float = FP64_TOLERANCE,
           scale: float | None = None) -> tuple[float, str, str]:
    """The worst error of the outputs, why they fail ('' if not), and the note of a criterion other than the
    relative error where one was used."""
    if len(got) != len(want):
        return float("inf"), f"{len(got)} outputs, the reference has {len(want)}", ""
    worst, notes = 0.0, list[str]()
    for g, w in zip(got, want, strict=True):
        error, why, note = _output_error(g, w, tolerance, scale)
        if why:
            return error, why, ""
        worst, notes = max(worst, error), notes + [note] * bool(note)
    return worst, "", notes[0] if notes else ""


def _own_inputs(inputs: list[Any], device: str, last: bool) -> list[Any]:
    """The draw on the device for one implementation's call: a copy unless it is the last to use the draw
    (an implementation that changes its inputs in place must not change the next one's)."""
    moved = to_device(inputs, device)
    shared = any(m is t for m, t in zip(tensors_of(moved), tensors_of(inputs), strict=True))
    return moved if last or not shared else _to_clone(moved)


def _to_clone(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, tuple | list):
        return type(value)(_to_clone(v) for v in value)
    return value


def _check_one(case: CheckedCase, call: Callable[[list[Any]], Any], inputs: list[Any], draw: _Draw, verdict: Verdict,
               index: int) -> Verdict:
    """One implementation's output on this draw against its reference (the caller holds the lock)."""
    verdict.reference = draw.reference
    verdict.tolerance = tolerance_for(case.device, draw.reference)
    try:
        got = tensors_of(call(inputs))
        if case.device.startswith("cuda"):
            torch.cuda.synchronize()  # an asynchronous failure is this check's, not the next phase's
    except Exception as exc:  # noqa: BLE001 - any failure of the implementation is its verdict
        return Verdict("runtime_error", detail=f"{type(exc).__name__}: {str(exc)[:300]}", checks=index)
    del inputs
    error, why, note = _error(got, draw.want, verdict.tolerance, draw.scale)
    del got
    verdict.relative_error = max(verdict.relative_error or 0.0, error)
    verdict.checks = index + 1
    if why or error > verdict.tolerance:
        verdict.status = "incorrect_numerical"
        over = f"error {error:.3g} over the tolerance {verdict.tolerance:g}"
        verdict.detail = why or (f"{note}: {over}" if note else f"relative {over}")
    elif note:
        verdict.detail = f"{note}: at most {verdict.relative_error:.3g}"
    return verdict


def _check_draw(case: CheckedCase, calls: dict[str, Callable[[list[Any]], Any]], verdicts: dict[str, Verdict],
                index: int) -> None:
    """One fresh draw: its reference computed once, every implementation still passing checked against it in
    one hold (a phase per implementation), then the draw and its reference freed before the lock goes."""
    pending = [key for key, verdict in verdicts.items() if verdict.status == "passed"]
    draw = _Draw(case.inputs(case.seed + 1000 + index))
    on_device = _on_cuda(draw.inputs)
    if not on_device:
        draw.scale = _inputs_rms(draw.inputs)  # CPU work, outside the lock
    held = False
    try:
        held = _reference(case, draw)
        for n, key in enumerate(pending):
            if held:
                case.lock.next_phase("correctness check")
            else:
                held = case.lock.acquire("correctness check")
            if n == 0 and on_device:
                draw.scale = _inputs_rms(draw.inputs)  # before an implementation can change them in place
            inputs = _own_inputs(draw.inputs, case.device, last=n == len(pending) - 1)
            verdicts[key] = _check_one(case, calls[key], inputs, draw, verdicts[key], index)
            del inputs
    finally:
        draw.free()
        if held:
            case.lock.release()


def check_all(case: CheckedCase, calls: dict[str, Callable[[list[Any]], Any]], checks: int = 2) -> dict[str, Verdict]:
    """``checks`` fresh draws of inputs; on each, every implementation's output against the reference execution
    of that draw (computed once for all of them); an implementation that fails is not checked further. Dropout
    is off meanwhile (``problem_randomness``)."""
    verdicts = {key: Verdict("passed") for key in calls}
    with dropout_off(case.model, case.reference_model) as note:
        for index in range(checks):
            if any(verdict.status == "passed" for verdict in verdicts.values()):
                _check_draw(case, calls, verdicts, index)
    for verdict in verdicts.values():
        if note and verdict.checks:
            verdict.detail = "; ".join(part for part in (verdict.detail, note) if part)
    return verdicts


def check(case: CheckedCase, call: Callable[[list[Any]], Any], checks: int = 2) -> Verdict:
    """``checks`` fresh draws of inputs; each output against the reference execution."""
    return check_all(case, {"call": call}, checks)["call"]
