"""A generic adapter for problem modules (KernelBench's format): a file that defines ``Model``,
``get_inputs()`` and ``get_init_inputs()``, its shapes as module constants.

- The file is loaded by digest: its sha256 must be the digest asked for, or nothing runs.
- ``Model(*get_init_inputs())`` is built once per case under a fixed seed; each correctness check
  draws fresh inputs from ``get_inputs()`` (a new seed per check).
- The checks (``problem_checks``): every implementation is prepared first (its first call), then each
  check's draw has its float64 reference computed once — on the GPU where the campaign asks
  (``Case.reference_device``), else or where that fails on the CPU, float32 on the CPU where float64
  cannot run — and every implementation checked against it before the next draw; the run says which
  reference it had and the tolerance follows from it.
- PyTorch's defaults are kept (matmul TF32 off, cuDNN TF32 on); the flags that change results are
  recorded with the run (``backend_flags``). Under TF32 the tolerance is ``TF32_TOLERANCE``.
- Implementations: eager, ``torch.compile`` (default) and ``torch.compile(mode="max-autotune-no-
  cudagraphs")``; the timed region is the forward call under ``torch.no_grad()``, as upstream's timing
  scripts run it (``without_grad``): with autograd recording, Inductor compiles a training graph that
  saves activations for a backward nobody runs, and some modules do not compile at all. The first call of a
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

import hashlib
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from kernelindex.runner.gpu_lock import GpuLock, LockedBackend, install_compile_hooks
from kernelindex.runner.memory import storage_bytes
from kernelindex.runner.problem_checks import Verdict, check_all, to_device

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
        self.reference_model = self.twin(self.model)  # stays on the CPU, never called: what twins copy
        with self.lock.hold("model to the device"):
            self.model.to(self.device)
        self.reference_s = 0.0  # wall seconds spent computing the checks' references
        self.inputs_drawn_on = "cpu"  # where get_inputs() last ran ("cuda" only where asked and it worked)
        self._timed: list[Any] | None = None
        self.backend: Any = None  # the last implementation's LockedBackend (None: plain torch.compile)

    def twin(self, like: torch.nn.Module | None = None) -> torch.nn.Module:
        """Another instance of the problem's model on the CPU, equal to ``like`` (default: the reference
        model): built again under the case's seed, as KernelBench builds its reference and its candidate, then
        given ``like``'s parameters, buffers and training modes. Not ``copy.deepcopy``: a deepcopy shares the
        functions the model holds, and a closure over its own submodules (KernelBench 3/44's
        ``self.mlpf = lambda x: m.c_proj(…)``) would go on calling the original's, moved to the GPU."""
        like = self.reference_model if like is None else like
        with torch.random.fork_rng(devices=[]):  # the process's random state stays as it was
            torch.manual_seed(self.seed)
            twin = self.module.Model(*self.module.get_init_inputs())
        twin.load_state_dict(like.state_dict())
        for mine, theirs in zip(twin.modules(), like.modules(), strict=True):
            mine.training = theirs.training
        return twin

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
                self._timed = to_device(drawn, self.device)
        return self._timed


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
    forward: Callable[..., Any] | None = None  # the implementation itself, for the checks (None: it failed)


def without_grad(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` called under ``torch.no_grad()``: its compilation, checks and timing alike (Dynamo guards on the
    grad mode, so a call in another mode would compile again)."""
    def forward(*args: Any) -> Any:
        with torch.no_grad():
            return fn(*args)

    return forward


def _state_tensors(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Every tensor the model's modules hold (parameters, buffers, plain attributes), by name."""
    held = {}
    for prefix, module in model.named_modules():
        for name, value in vars(module).items():
            found = value.items() if name in ("_parameters", "_buffers") else [(name, value)]
            for attr, tensor in found:
                if isinstance(tensor, torch.Tensor):
                    held[f"{prefix}.{attr}" if prefix else attr] = tensor
    return held


def _held_tensors(model: torch.nn.Module) -> dict[str, int]:
    return {name: id(tensor) for name, tensor in _state_tensors(model).items()}


def state_bytes(model: torch.nn.Module) -> int:
    """Bytes of the distinct storages the model keeps between calls (parameters, buffers, tensor attributes):
    protocol v4's unrotated state (``problem_stream``)."""
    return storage_bytes(_state_tensors(model).values())


def rebound_state(model: torch.nn.Module, call: Callable[[], object]) -> str | None:
    """Why ``call`` must not be captured in a CUDA graph, or None: one call replaces tensors the model keeps
    between calls (KernelBench 3/33 ends each forward with ``self.hidden = tanh(…)`` after copying into the old
    one). A graph captured over such calls keeps writing into the tensor the first captured call found, which
    the rebinding frees during capture and the next capture's ``empty_cache`` returns to the driver: the
    replay then writes to memory nobody owns (an illegal memory access on the H200). Runs ``call`` once."""
    before = _held_tensors(model)
    call()
    after = _held_tensors(model)
    replaced = sorted(name for name, ident in before.items() if after.get(name, ident) != ident)
    if not replaced:
        return None
    return (f"each call replaces tensors its model keeps between calls ({', '.join(replaced[:4])}): a captured "
            "graph would go on writing to memory freed during capture")


def first_call(case: Case, key: str) -> Prepared:
    """Compile (timing the first call on its own) and bind the timed call to one draw of inputs on the device;
    the verdict stays ``passed`` until the checks (``check_prepared``) say otherwise."""
    fn = without_grad(implementation(case, key))
    inputs = case.timed_inputs()
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
    if key == "eager":
        return Prepared(key, lambda: fn(*inputs), Verdict("passed"), forward=fn)
    wait_ns = round((case.lock.summary()["waited_s"] - waited) * 1e9)
    unlocked = bool(case.backend.compiled_unlocked) if case.backend is not None else False
    return Prepared(key, lambda: fn(*inputs), Verdict("passed"), max(elapsed - wait_ns, 0), wait_ns, unlocked, fn)


def check_prepared(case: Case, prepared: dict[str, Prepared], checks: int = 2) -> None:
    """Every implementation whose first call worked, checked on the same draws (``check_all``)."""
    calls = {key: _forward(p.forward) for key, p in prepared.items() if p.forward is not None}
    for key, verdict in check_all(case, calls, checks).items():
        prepared[key].verdict = verdict


def _forward(fn: Callable[..., Any]) -> Callable[[list[Any]], Any]:
    return lambda xs: fn(*xs)


def prepare(case: Case, key: str, checks: int = 2) -> Prepared:
    """One implementation: its first call, then its checks."""
    prepared = {key: first_call(case, key)}
    check_prepared(case, prepared, checks)
    return prepared[key]
