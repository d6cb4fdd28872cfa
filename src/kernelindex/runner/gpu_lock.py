"""An exclusive lock on one GPU, shared by the problem processes a campaign runs on it at once.

Several problem processes may share one GPU (``kernelindex.campaigns.kernelbench run --workers-per-gpu K``):
their CPU-only parts (process start, ``import torch``, building the model on the CPU, Inductor's code
generation and Triton compilation, a float64 reference on the CPU) overlap, while every phase that runs
work on the GPU — moving the model and inputs there, drawing inputs, a float64 reference on the GPU, the
correctness checks, the first call of an implementation, compile-time benchmarks, warm-up, timing and v3's
extras — holds this lock, so no two processes' GPU work ever overlaps and a timed call has the GPU to itself.

The lock is ``fcntl.flock`` on a file (``LOCK_EX``), opened only while it is held (close-on-exec, so no
helper process forked or started by the problem keeps it); the kernel releases it when its process dies,
so a problem killed at its time limit frees the GPU for the others. Before releasing, the process waits
for its GPU work to finish (``on_release``: ``torch.cuda.synchronize`` and ``empty_cache``), so work
launched under the lock never runs past it. Every hold is recorded (phase, when asked, acquired and
released, in ``time.time()`` seconds) and travels with the result, so overlaps can be checked afterwards.
Without a path the holds are still recorded and nothing is locked (one process per GPU). ``allocations``
(CUDA's allocation count) is a tripwire: GPU tensors made between a release and the next acquire are recorded
(``unlocked``: the window and how many), and the campaign reruns alone every problem whose timing ran in such
a window of another process (``kernelindex.campaigns.kernelbench``).

``waits``: a file where the process says how long it has waited for the lock (``TOTAL SINCE``: seconds
waited so far, and the ``time.time()`` its current wait began, 0 when it holds or runs unlocked), so the
parent can leave a problem's waiting for another's GPU phase out of its time limit (``problem_process``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


class GpuLock:
    def __init__(self, path: str | None = None, on_release: Callable[[], None] | None = None,
                 waits: str | None = None, allocations: Callable[[], int] | None = None) -> None:
        self.path = path or None
        self.on_release = on_release
        self.waits = waits or None
        self._waited = 0.0
        # The tripwire: the process's count of device allocations (CUDA's allocator), read at each release and
        # acquire; a rise in between means GPU tensors were made without the lock (a path the hooks missed).
        self.allocations = allocations
        self._count, self._released_at = 0, 0.0
        self.unlocked: list[tuple[str, float, float, int]] = []  # (next phase, from, to, allocations)
        self.holds: list[tuple[str, float, float, float]] = []  # (phase, asked, acquired, released)
        self._fd: int | None = None
        self._phase = ""
        self._asked = self._acquired = 0.0
        self._held = False
        # Within the process one thread holds it at a time: a hold asked from another thread (a benchmark run off
        # the main thread while it compiles with the GPU let go) waits for the holder's release.
        self._owner: int | None = None
        self._turn = threading.Condition()

    @property
    def held(self) -> bool:
        return self._held

    def acquire(self, phase: str) -> bool:
        """Take the lock for ``phase``; False (and nothing done) where this thread already holds it."""
        me = threading.get_ident()
        with self._turn:
            while self._held and self._owner != me:
                self._turn.wait()
            if self._held:
                return False
            self._held, self._owner = True, me
        try:
            self._asked = time.time()
            if self.path:
                self._say_waits(self._asked)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                except BaseException:
                    os.close(fd)
                    raise
                self._fd = fd
        except BaseException:
            self._let_go()
            raise
        self._acquired, self._phase = time.time(), phase
        self._waited += self._acquired - self._asked
        if self.allocations is not None:
            count = self.allocations()
            if count > self._count:
                self.unlocked.append((phase, self._released_at, self._asked, count - self._count))
        if self.path:
            self._say_waits(0.0)
        return True

    def _say_waits(self, since: float) -> None:
        if self.waits:
            with open(self.waits + ".new", "w") as out:
                out.write(f"{self._waited:.3f} {since:.3f}\n")
            os.replace(self.waits + ".new", self.waits)

    def release(self) -> None:
        if not self._held or self._owner != threading.get_ident():
            return
        try:
            if self.on_release is not None:
                self.on_release()  # the GPU work launched under the lock ends under it
        finally:
            if self.allocations is not None:
                self._count = self.allocations()
            released = self._released_at = time.time()
            if self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                os.close(self._fd)
                self._fd = None
            self.holds.append((self._phase, self._asked, self._acquired, released))
            self._let_go()

    def _let_go(self) -> None:
        with self._turn:
            self._held, self._owner = False, None
            self._turn.notify_all()

    def next_phase(self, phase: str) -> None:
        """Go on holding the lock under another phase's name: the current hold is recorded as ended now and the
        next begins at once, with nothing let go in between (a float64 reference kept on the GPU for the checks
        that follow it is never left there while another process runs)."""
        if not self._held or self._owner != threading.get_ident():
            raise RuntimeError(f"next_phase({phase!r}): this thread holds no GPU lock to go on holding")
        now = time.time()
        self.holds.append((self._phase, self._asked, self._acquired, now))
        self._phase, self._asked, self._acquired = phase, now, now

    @contextlib.contextmanager
    def hold(self, phase: str) -> Iterator[None]:
        """Hold the lock for the block (a no-op inside a block that already holds it)."""
        took = self.acquire(phase)
        try:
            yield
        finally:
            if took:
                self.release()

    @contextlib.contextmanager
    def released(self) -> Iterator[None]:
        """Let the GPU go for a CPU-only block inside a held one (Inductor's compilation), then take it back."""
        phase = self._phase
        was = self._held
        if was:
            self.release()
        try:
            yield
        finally:
            if was:
                self.acquire(phase + " (after compiling)")

    def summary(self) -> dict[str, Any]:
        return {"path": self.path, "held_s": round(sum(r - a for _, _, a, r in self.holds), 3),
                "waited_s": round(sum(a - q for _, q, a, _ in self.holds), 3),
                "holds": [[phase, round(asked, 4), round(acquired, 4), round(released, 4)]
                          for phase, asked, acquired, released in self.holds],
                "unlocked": [[phase, round(start, 4), round(end, 4), count]
                             for phase, start, end, count in self.unlocked]}


_COMPILING: list[GpuLock] = []  # the lock of the compilation in progress (for the benchmark hooks)
_PHASE = "_gpu_lock_phase"  # marks a hook (``__wrapped__`` will not do: functools.wraps sets it on Inductor's own)
# Inductor's pattern-matcher set-up, once per process and device (``lazy_init`` of these passes, functools.cache):
# tracing the replacement patterns makes real tensors on the compile's device, fuse-attention's scalar example
# inputs (``torch.tensor(2.0, device=...)`` materialises its data before FakeTensorMode sees it) — 48 CUDA
# allocations under torch 2.11, in the first compilation of every problem process.
_PATTERN_INITS = ("pre_grad", "joint_graph", "post_grad", "freezing_patterns")


def _hold_while_compiling(fn: Callable[..., Any], phase: str) -> Callable[..., Any]:
    def held(*args: Any, **kwargs: Any) -> Any:
        if not _COMPILING:
            return fn(*args, **kwargs)
        with _COMPILING[-1].hold(phase):
            return fn(*args, **kwargs)

    held.__wrapped__ = fn  # type: ignore[attr-defined]
    setattr(held, _PHASE, phase)
    return held


def _hold_first_call_while_compiling(fn: Callable[..., Any], phase: str) -> Callable[..., Any]:
    """``_hold_while_compiling`` for a once-per-arguments init: later calls (cached, no GPU work) skip the lock,
    so they never wait for another process's timing."""
    locked = _hold_while_compiling(fn, phase)
    done: set[Any] = set()

    def held(*args: Any, **kwargs: Any) -> Any:
        key: Any = (args, tuple(sorted(kwargs.items())))
        try:
            hash(key)
        except TypeError:
            key = None  # unhashable arguments: held every time
        if key is not None and key in done:
            return fn(*args, **kwargs)
        result = locked(*args, **kwargs)
        if key is not None:
            done.add(key)
        return result

    held.__wrapped__ = fn  # type: ignore[attr-defined]
    setattr(held, _PHASE, phase)
    return held


def _hook_method(owner: Any, name: str, phase: str) -> bool:
    """Wrap ``owner.name`` (a plain function: an instance method) so that it holds the lock while compiling."""
    import inspect

    method = inspect.getattr_static(owner, name, None)
    if not inspect.isfunction(method):
        return False
    if not hasattr(method, _PHASE):
        setattr(owner, name, _hold_while_compiling(method, phase))
    return True


def _hook_device_tensors() -> None:
    """Inductor's compile-time work outside FakeTensorMode that makes real tensors on the compile's device (the
    allocation tripwire found them): the pattern-matcher set-up (``_PATTERN_INITS``, held its first time) and
    the joint graph's constant folding (``constant_fold_uniform_value`` evaluates ``full``, ``scalar_tensor``
    and pointwise ops on them for real: one allocation per folded constant, every compilation). Whatever this
    PyTorch lacks needs no lock."""
    import importlib

    for name in _PATTERN_INITS:
        try:
            module: Any = importlib.import_module(f"torch._inductor.fx_passes.{name}")
        except ImportError:
            continue
        init = getattr(module, "lazy_init", None)
        if callable(init) and not hasattr(init, _PHASE):
            module.lazy_init = _hold_first_call_while_compiling(init, "compile: pattern init")
    from torch._inductor.fx_passes import joint_graph

    fold = getattr(joint_graph, "constant_fold_uniform_value", None)
    if callable(fold) and not hasattr(fold, _PHASE):
        joint_graph.constant_fold_uniform_value = _hold_while_compiling(fold, "compile: constant folding")


def install_compile_hooks(autotune: bool = False) -> bool:
    """Make Inductor's compile-time GPU work take the lock, so the rest of its compilation can run without it:
    the pad-mm pass benchmarks padded against unpadded matmuls on its own example tensors (default mode too);
    every Inductor benchmark goes through ``runtime.benchmarking.benchmarker``; the pattern-matcher set-up and
    the joint graph's constant folding make real tensors on the device (``_hook_device_tensors``); with
    ``autotune`` (max-autotune modes) also template autotuning (``AlgorithmSelectorCache.benchmark``: its
    example tensors and timings) and the scheduler's fusion benchmarks (``Scheduler.benchmark_*``: theirs).
    False where this PyTorch lacks any of the benchmarks: the compilation then keeps the lock throughout
    (nothing overlaps, nothing is left unlocked). A path these miss is caught by the allocation tripwire
    (``GpuLock.allocations``)."""
    try:
        from torch._inductor import scheduler, select_algorithm
        from torch._inductor.fx_passes import pad_mm
        from torch._inductor.runtime import benchmarking
    except ImportError:
        return False
    bench = getattr(benchmarking, "benchmarker", None)
    if not callable(getattr(pad_mm, "should_pad", None)) or bench is None:
        return False
    if autotune:
        selector = getattr(select_algorithm, "AlgorithmSelectorCache", None)
        fusion = getattr(scheduler, "Scheduler", None)
        names = ("benchmark_fused_nodes", "benchmark_codegened_module", "benchmark_combo_kernel")
        if selector is None or fusion is None or not _hook_method(selector, "benchmark", "compile: autotuning") \
                or not all(_hook_method(fusion, n, "compile: fusion benchmark") for n in names):
            return False
    if not hasattr(pad_mm.should_pad, _PHASE):
        pad_mm.should_pad = _hold_while_compiling(pad_mm.should_pad, "compile: pad-mm benchmark")
    for name in ("benchmark_gpu", "benchmark"):
        method = getattr(bench, name, None)
        if callable(method) and not hasattr(method, _PHASE):
            setattr(bench, name, _hold_while_compiling(method, "compile: Inductor benchmark"))
    _hook_device_tensors()
    return True


class LockedBackend:
    """Inductor as ``torch.compile(mode=...)`` makes it (the same wrapper object), its compilation run with the
    GPU let go in the default mode: the first call holds the lock (Dynamo's tracing, any eager code around the
    graphs, the compiled graph's first run and Triton's launch-time autotuning), Inductor's lowering, code
    generation and Triton compilation run without it, its GPU benchmarks take it back (max-autotune's template
    autotuning and fusion benchmarks too, with their example tensors), as do the steps that make tensors on the
    device (pattern-matcher set-up, constant folding: ``install_compile_hooks``). Where the
    hooks cannot be installed the lock is kept while compiling."""

    def __init__(self, inner: Any, lock: GpuLock, overlap: bool) -> None:
        self.inner, self.lock, self.overlap = inner, lock, overlap
        self.compiled_unlocked = 0  # graphs compiled with the GPU let go

    def __call__(self, gm: Any, example_inputs: Any, **kwargs: Any) -> Any:
        if not self.overlap:
            return self.inner(gm, example_inputs, **kwargs)
        _COMPILING.append(self.lock)
        try:
            with self.lock.released():
                compiled = self.inner(gm, example_inputs, **kwargs)
        finally:
            _COMPILING.pop()
        self.compiled_unlocked += 1
        return compiled

    def __getattr__(self, name: str) -> Any:  # get_compiler_config, reset, … as the wrapper has them
        return getattr(self.inner, name)


def cuda_allocations() -> int:
    """CUDA's caching allocator's count of allocations so far in this process (0 before CUDA starts)."""
    import torch

    if not (torch.cuda.is_available() and torch.cuda.is_initialized()):
        return 0
    return int(torch.cuda.memory_stats().get("allocation.all.allocated", 0))


def cuda_release() -> None:
    """Wait for the GPU work launched under the lock and hand the cached memory back (other workers need it)."""
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def waited_s(waits: str | None, now: float | None = None) -> float:
    """Seconds a process has waited for the lock so far, its current wait included (``GpuLock.waits``)."""
    if not waits:
        return 0.0
    try:
        total, since = (float(x) for x in Path(waits).read_text().split())
    except (OSError, ValueError):
        return 0.0
    return total + ((now or time.time()) - since if since else 0.0)
