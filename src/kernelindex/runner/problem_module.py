"""A generic adapter for problem modules (KernelBench's format): a file that defines ``Model``,
``get_inputs()`` and ``get_init_inputs()``, its shapes as module constants.

- The file is loaded by digest: its sha256 must be the digest asked for, or nothing runs.
- ``Model(*get_init_inputs())`` is built once per case under a fixed seed; each correctness check
  draws fresh inputs from ``get_inputs()`` (a new seed per check).
- The reference is the same module executed in float64 (a deep copy of the model, its parameters and
  buffers and the inputs' floating tensors cast to float64), on the CPU — or first on the GPU where the
  campaign asks (``Case.reference_device``), then the CPU where it does not fit; the run says which.
  Where the module cannot run in float64 (an op without a float64 kernel, a dtype the module forces),
  the reference is its float32 execution on the CPU, and the run says so; the tolerance is then
  ``FP32_REFERENCE_TOLERANCE``.
- PyTorch's defaults are kept (matmul TF32 off, cuDNN TF32 on); the flags that change results are
  recorded with the run (``backend_flags``). Under TF32 the tolerance is ``TF32_TOLERANCE``.
- Implementations: eager, ``torch.compile`` (default) and ``torch.compile(mode="max-autotune-no-
  cudagraphs")``; the timed region is the forward call, as upstream times it. The first call of a
  compiled implementation (its compilation and autotuning) is timed on its own and recorded
  (``compile_ns``), never part of the figure.
- Several problem processes may share one GPU: every phase that runs work on the GPU holds the
  case's ``GpuLock`` (``runner.gpu_lock``: moving the model and inputs there, drawing inputs, a GPU
  reference, the checks, an implementation's first call, Inductor's compile-time benchmarks and
  autotuning; the timing is held by ``problem_process``), while the CPU-only parts overlap: building
  the model, a CPU reference, and Inductor's compilation (``gpu_lock.LockedBackend`` lets the GPU go
  while Inductor compiles, its GPU benchmarks take it back). The time a first call waited for the lock
  is taken out of its ``compile_ns``.
- Older problem sets call ``torch.rand_mix`` / ``torch.rand_mix_like``, helpers KernelBench's own
  package registers on torch; ``install_rand_mix`` provides ours (documented below).

The calls go to the runner's timing interface (``timing.measure_interleaved``) unchanged.
``problem_process`` runs all of this in its own process with a time limit and no network.
"""

from __future__ import annotations

import copy
import hashlib
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from kernelindex.runner.gpu_lock import GpuLock, LockedBackend, install_compile_hooks

FP64_TOLERANCE = 1e-4  # relative Frobenius error of fp32 execution against float64, no TF32 involved
TF32_TOLERANCE = 1e-2  # … where TF32 math is allowed on a CUDA device (cuDNN's default for convolutions)
FP32_REFERENCE_TOLERANCE = 1e-3  # … against a float32 CPU reference, where float64 cannot run
TRIVIAL_NORM_RATIO = 1e-3
IMPLEMENTATIONS = ("eager", "torch-compile", "max-autotune-no-cudagraphs")


class ProblemLoadError(ValueError):
    """The file is not the problem asked for, or not a problem module; the message says which."""


def _rand_mix(*size: Any, **kwargs: Any) -> torch.Tensor:
    """KernelBench's ``torch.rand_mix`` stand-in: each call draws from one distribution of a small
    pool (standard normal, uniform on [-1, 1), standard Laplace, exponential(1), standard log-normal),
    picked by the global generator, so a seeded check is reproducible."""
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], tuple | list | torch.Size) else size
    pick = int(torch.randint(0, 5, ()).item())
    dtype, device = kwargs.get("dtype"), kwargs.get("device")
    base = torch.empty(shape, dtype=dtype or torch.get_default_dtype(), device=device)
    if pick == 0:
        return base.normal_()
    if pick == 1:
        return base.uniform_(-1, 1)
    if pick == 2:
        return torch.distributions.Laplace(0.0, 1.0).sample(shape).to(base)
    if pick == 3:
        return base.exponential_(1.0)
    return base.log_normal_()


def install_rand_mix() -> None:
    if not hasattr(torch, "rand_mix"):
        torch.rand_mix = _rand_mix  # type: ignore[attr-defined]  # KernelBench registers it the same way
        torch.rand_mix_like = lambda t, **kw: _rand_mix(*t.shape, dtype=t.dtype, device=t.device)  # type: ignore[attr-defined]  # idem


def load_problem(source: str, digest: str) -> types.ModuleType:
    """The problem module whose file has sha256 ``digest`` (``sha256:…``)."""
    found = "sha256:" + hashlib.sha256(source.encode("utf-8")).hexdigest()
    if found != digest:
        raise ProblemLoadError(f"the file's sha256 is {found}, not the problem asked for ({digest})")
    install_rand_mix()
    module = types.ModuleType(f"problem_{digest[7:19]}")
    exec(compile(source, f"<problem {digest[:19]}>", "exec"), module.__dict__)  # noqa: S102 - the problem *is* code
    missing = [name for name in ("Model", "get_inputs", "get_init_inputs") if not hasattr(module, name)]
    if missing:
        raise ProblemLoadError(f"problem {digest[:19]} defines no {', '.join(missing)}")
    return module


def backend_flags() -> dict[str, str]:
    """The backend settings that change results, as they are (PyTorch's defaults are kept)."""
    return {
        "torch.backends.cuda.matmul.allow_tf32": str(torch.backends.cuda.matmul.allow_tf32),
        "torch.backends.cudnn.allow_tf32": str(torch.backends.cudnn.allow_tf32),
        "torch.backends.cudnn.benchmark": str(torch.backends.cudnn.benchmark),
        "torch.backends.cudnn.deterministic": str(torch.backends.cudnn.deterministic),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
    }


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, tuple | list):
        return [t for item in value for t in _tensors(item)]
    return []


def _to(value: Any, device: str, dtype: torch.dtype | None = None) -> Any:
    if isinstance(value, torch.Tensor):
        floating = value.is_floating_point() and dtype is not None
        return value.to(device=device, dtype=dtype if floating else value.dtype)
    if isinstance(value, tuple | list):
        return type(value)(_to(v, device, dtype) for v in value)
    return value


def _on_cuda(value: Any) -> bool:
    return any(t.is_cuda for t in _tensors(value))


@dataclass
class Case:
    """One problem on one device: the model, built once, and how to draw its inputs."""

    module: types.ModuleType
    device: str
    seed: int = 0
    reference_device: str = "cpu"  # where the float64 reference runs first ("cuda": faster, where it fits)
    lock: GpuLock = field(default_factory=GpuLock)  # held around every phase that runs work on the device
    draw_on_device: bool = False  # get_inputs() with the device as default device (the CPU where that fails)
    model: torch.nn.Module = field(init=False)

    def __post_init__(self) -> None:
        torch.manual_seed(self.seed)
        self.model = self.module.Model(*self.module.get_init_inputs())  # on the CPU: no lock needed
        self.reference_model = copy.deepcopy(self.model)
        with self.lock.hold("model to the device"):
            self.model.to(self.device)
        # The reference of each check's seed, computed once for every implementation (the draws are the same).
        self.references: dict[int, tuple[list[torch.Tensor], str]] = {}
        self.reference_s = 0.0  # wall seconds spent computing them
        self.inputs_drawn_on = "cpu"  # where get_inputs() last ran ("cuda" only where asked and it worked)
        self._timed: list[Any] | None = None
        self.backend: Any = None  # the last implementation's LockedBackend (None: plain torch.compile)

    def inputs(self, seed: int) -> list[Any]:
        """A draw of inputs under ``seed``: on the device where the case asks (a draw there is a GPU phase,
        under the lock), the same recipe and dtypes, else on the CPU as the problem file writes it."""
        if self.draw_on_device and self.device != "cpu":
            try:
                with self.lock.hold("draw inputs"), torch.device(self.device):
                    torch.manual_seed(seed)
                    drawn = list(self.module.get_inputs())
                self.inputs_drawn_on = self.device
                return drawn
            except Exception:  # noqa: BLE001 - a recipe that cannot run on the device is drawn on the CPU
                self.draw_on_device = False
        torch.manual_seed(seed)
        self.inputs_drawn_on = "cpu"
        return list(self.module.get_inputs())

    def timed_inputs(self) -> list[Any]:
        """The draw every implementation's first call and timing use (seed ``self.seed``), on the device once:
        the implementations share it (the same values they were each drawn before), so one copy is held."""
        if self._timed is None:
            drawn = self.inputs(self.seed)
            with self.lock.hold("inputs to the device"):
                self._timed = _to(drawn, self.device)
        return self._timed


@dataclass
class Verdict:
    status: str  # passed | incorrect_numerical | runtime_error
    relative_error: float | None = None
    tolerance: float | None = None
    reference: str = "float64 on the CPU"
    detail: str = ""
    checks: int = 0


def _float64(case: Case, inputs: list[Any], device: str) -> list[torch.Tensor]:
    """The float64 execution on ``device``; a CUDA one holds the lock (the cast of the model is done on the
    CPU first, outside it), a CPU one runs beside the other workers' GPU phases."""
    model64 = copy.deepcopy(case.reference_model).to(dtype=torch.float64)
    if device == "cpu" and _on_cuda(inputs):
        with case.lock.hold("inputs to the CPU for the reference"):
            inputs = _to(inputs, "cpu")
    with case.lock.hold("float64 reference on the GPU") if device != "cpu" else _nothing(), torch.no_grad():
        out = model64.to(device)(*_to(inputs, device, torch.float64))
        return [t.detach().to("cpu", torch.float64) for t in _tensors(out)]


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _reference(case: Case, inputs: list[Any]) -> tuple[list[torch.Tensor], str]:
    """Float64 on ``case.reference_device`` (the CPU unless the campaign asks for the GPU), then on the CPU
    (a reference too big for the GPU beside the case, an op without a float64 kernel there); float32 on the
    CPU only where float64 cannot run at all."""
    failure: BaseException | None = None
    for device in dict.fromkeys((case.reference_device, "cpu")):
        try:
            return _float64(case, inputs, device), f"float64 on the {'GPU' if device.startswith('cuda') else 'CPU'}"
        except (RuntimeError, TypeError, NotImplementedError) as exc:
            failure = exc
            if device.startswith("cuda"):
                torch.cuda.empty_cache()
    if _on_cuda(inputs):
        with case.lock.hold("inputs to the CPU for the reference"):
            inputs = _to(inputs, "cpu")
    with torch.no_grad():
        out = copy.deepcopy(case.reference_model)(*_to(inputs, "cpu"))
    why = f"{type(failure).__name__}: {str(failure)[:160]}"
    return [t.double() for t in _tensors(out)], f"float32 on the CPU (the module cannot run in float64: {why})"


def tolerance_for(device: str, reference: str) -> float:
    if reference.startswith("float32"):
        return FP32_REFERENCE_TOLERANCE
    tf32 = torch.backends.cuda.matmul.allow_tf32 or torch.backends.cudnn.allow_tf32
    return TF32_TOLERANCE if device.startswith("cuda") and tf32 else FP64_TOLERANCE


def _compared(g: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Both in float64 on the output's device (a GPU compares a large output in milliseconds, under the
    lock the check holds), on the CPU where the reference does not fit beside it."""
    if g.is_cuda:
        try:
            return g.detach().to(torch.float64), w.to(g.device)
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
    return g.detach().to("cpu", torch.float64), w


def _error(got: list[torch.Tensor], want: list[torch.Tensor]) -> tuple[float, str]:
    if len(got) != len(want):
        return float("inf"), f"{len(got)} outputs, the reference has {len(want)}"
    worst = 0.0
    for g, w in zip(got, want, strict=True):
        if g.shape != w.shape:
            return float("inf"), f"output shape {tuple(g.shape)}, the reference's {tuple(w.shape)}"
        g64, w = _compared(g, w)
        if not torch.isfinite(g64).all():
            return float("inf"), "NaN or Inf in the output"
        norm = float(torch.linalg.vector_norm(w))
        if norm and float(torch.linalg.vector_norm(g64)) < TRIVIAL_NORM_RATIO * norm:
            return float("inf"), "the output is (nearly) zero where the reference is not"
        worst = max(worst, float(torch.linalg.vector_norm(g64 - w)) / (norm or 1.0))
    return worst, ""


def check(case: Case, call: Callable[[list[Any]], Any], checks: int = 2) -> Verdict:
    """``checks`` fresh draws of inputs; each output against the reference execution."""
    verdict = Verdict("passed")
    for index in range(checks):
        seed = case.seed + 1000 + index
        inputs = case.inputs(seed)
        if seed not in case.references:
            start = time.perf_counter()
            case.references[seed] = _reference(case, inputs)
            case.reference_s += time.perf_counter() - start
        want, verdict.reference = case.references[seed]
        verdict.tolerance = tolerance_for(case.device, verdict.reference)
        with case.lock.hold("correctness check"):
            try:
                got = _tensors(call(_to(inputs, case.device)))
                if case.device.startswith("cuda"):
                    torch.cuda.synchronize()  # an asynchronous failure is this check's, not the next phase's
            except Exception as exc:  # noqa: BLE001 - any failure of the implementation is its verdict
                return Verdict("runtime_error", detail=f"{type(exc).__name__}: {str(exc)[:300]}", checks=index)
            error, why = _error(got, want)
            del got, inputs
        verdict.relative_error = max(verdict.relative_error or 0.0, error)
        verdict.checks = index + 1
        if why or error > verdict.tolerance:
            verdict.status = "incorrect_numerical"
            verdict.detail = why or f"relative error {error:.3g} over the tolerance {verdict.tolerance:g}"
            return verdict
    return verdict


def implementation(case: Case, key: str) -> Callable[..., Any]:
    """The callable of ``key`` (see IMPLEMENTATIONS) on the case's model."""
    if key == "eager":
        return case.model
    if key not in IMPLEMENTATIONS:
        raise ValueError(f"unknown implementation {key!r}; one of {', '.join(IMPLEMENTATIONS)}")
    import torch._dynamo

    torch._dynamo.reset()
    mode = None if key == "torch-compile" else key
    wrapper = getattr(torch, "_TorchCompileInductorWrapper", None)
    case.backend = None
    if wrapper is None:  # the compilation holds the lock throughout
        return torch.compile(case.model, mode=mode, dynamic=False)
    overlap = install_compile_hooks(autotune=mode is not None)
    case.backend = LockedBackend(wrapper(mode, None, False), case.lock, overlap=overlap)
    return torch.compile(case.model, backend=case.backend, dynamic=False)


@dataclass
class Prepared:
    """An implementation ready for the timing interface: a zero-argument forward call."""

    key: str
    call: Callable[[], object]
    verdict: Verdict
    compile_ns: int | None = None  # the first call's time (compilation, autotuning): never in the figure
    compile_lock_wait_ns: int = 0  # … the time it waited for another process's GPU phase, taken out of it
    compiled_unlocked: bool | None = None  # whether Inductor compiled with the GPU let go


def prepare(case: Case, key: str, checks: int = 2) -> Prepared:
    """Compile (timing the first call on its own), check, then bind the timed call to one draw of
    inputs on the device."""
    fn = implementation(case, key)
    inputs = case.timed_inputs()
    compile_ns = None
    waited = case.lock.summary()["waited_s"]
    try:
        with case.lock.hold(f"first call {key}"):
            start = time.perf_counter_ns()
            fn(*inputs)
            if case.device.startswith("cuda"):
                torch.cuda.synchronize()
            elapsed = time.perf_counter_ns() - start
    except Exception as exc:  # noqa: BLE001 - a compile failure is this implementation's verdict
        status = "compile_error" if key != "eager" else "runtime_error"
        return Prepared(key, lambda: None, Verdict(status, detail=f"{type(exc).__name__}: {str(exc)[:300]}"))
    wait_ns = round((case.lock.summary()["waited_s"] - waited) * 1e9)
    unlocked = None
    if key != "eager":
        compile_ns = max(elapsed - wait_ns, 0)
        unlocked = bool(case.backend.compiled_unlocked) if case.backend is not None else False
    verdict = check(case, lambda xs: fn(*xs), checks)
    return Prepared(key, lambda: fn(*inputs), verdict, compile_ns, wait_ns if key != "eager" else 0, unlocked)
