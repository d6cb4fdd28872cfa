"""Run one problem module in its own process, with a time limit and no network.

``run_isolated`` starts ``python -m kernelindex.runner.problem_process`` with the request on stdin
(the file's text and its digest, the device, the implementations, the timing policy) and an
environment without proxies; the child refuses every socket before it loads the problem, then
prepares each implementation (its first call: compilation), checks them all on the same draws of
inputs against each draw's reference execution, times the passed ones through
``timing.measure_interleaved`` and prints one JSON result. Where the device times protocol v4 (CUDA, the CPU
test device) the figure is each call's stream time over R rotating input sets (``problem_stream``), with v3's
device time kept beside it as the kernel busy time. A child that runs past the time limit
is killed and reported as ``timeout``; one that dies is ``runtime_error`` with its last words.
The result carries the backend flags (TF32, cuDNN) the checks and the timing ran under.

Several children may share one GPU (the request's ``gpu_lock``: a lock file, ``runner.gpu_lock``):
every phase that runs work on the GPU, the timing included, holds the lock, and the result carries each
hold (``gpu_lock``), so that no two children's GPU phases overlap and this can be checked afterwards.
``cpu_threads`` caps the child's intra-op threads (the workers share the host's cores);
``fresh_compile`` turns off Inductor's FX-graph, AOT-autograd and autotuning caches, so every
problem's compilation is its own (a shared ``TORCHINDUCTOR_CACHE_DIR`` still shares Triton's
compiled kernels of identical source).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from typing import Any

from kernelindex.runner.gpu_lock import waited_s

NO_NETWORK = "network disabled for problem modules"
DEFAULT_TIME_LIMIT_S = 600
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception)(: |$)")  # a traceback's last line
STDERR_TAIL_LINES = 40  # of a dead process's error output, kept in its result (the campaign's files, not the bundle)


class _RefusedSocket(socket.socket):
    """A socket class that cannot be made (a class, so that modules subclassing socket still import)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise OSError(NO_NETWORK)


def _no_network() -> None:
    """Every later connection attempt of the process fails (torch and the runner are imported first)."""
    import torch  # noqa: F401 - imported before the sockets go

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OSError(NO_NETWORK)

    socket.socket = _RefusedSocket  # type: ignore[misc]
    socket.create_connection = refuse
    socket.getaddrinfo = refuse


def _device(request: dict[str, Any]) -> Any:
    if request["device"] == "cuda":  # allocates and fills the L2 flush buffer: under the lock
        from kernelindex.runner.cuda import CudaDevice

        return CudaDevice()
    from kernelindex.runner.cpu_device import CpuTestDevice

    return CpuTestDevice(request.get("product", "cpu"))


def _timing_context(device: Any) -> contextlib.AbstractContextManager[object]:
    context = getattr(device, "timing_context", None)
    return context() if context is not None else contextlib.nullcontext()


def _timing_json(m: Any, cross: tuple[str, float, str | None] | None, host: tuple[float, float] | None,
                 peak: int | None, v4: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything a run's timing and its samples file need (``problem_records`` writes them): the summary,
    every sample (v3: device time per call; v4: stream time per call of each replay), each sample's trace
    (span, syncs, device-to-host copies), the cross-check and host cost, and v4's fields (``v4``:
    ``stream_setup.v4_fields``, the stream facts and the kernel busy time)."""
    return {**m.summary().as_ns(), "samples": len(m.samples), "method": m.method, "stop_reason": m.stop_reason,
            "fallback_reason": m.fallback_reason, "warmup_calls": m.warmup_calls,
            "device_ns": [round(v) for v in m.samples], "host_ns": [round(v) for v in m.host_samples],
            "activities": [[a.span_ns, a.syncs, a.device_to_host_copies] for a in m.activities],
            "cross_check": list(cross) if cross else None, "host_cost": list(host) if host else None,
            "peak_bytes": peak, **({"v4": v4} if v4 else {})}


def _samplers(device: Any, case: Any, passed: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], Any]:
    """(samplers, stream facts, rotation sets): protocol v4's stream samplers where the device times stream time
    (CUDA, the CPU test device; ``problem_stream``), else v3's device-time samplers, no facts, no sets."""
    from kernelindex.runner.stream_setup import StreamDevice

    if not isinstance(device, StreamDevice):
        return {key: device.sampler(p.call) for key, p in passed.items()}, {}, None
    from kernelindex.runner.problem_stream import RotationSets, stream_samplers

    sets = RotationSets(case)
    samplers, facts = stream_samplers(device, case, passed, sets)
    return samplers, facts, sets


def _kernel_busy(device: Any, call: Any) -> tuple[tuple[float, int, float | None] | None, str]:
    """v4's secondary figure, v3's device time (CUPTI union), where the device offers it; a failure is said."""
    busy = getattr(device, "kernel_busy", None)
    try:
        return (busy(call) if busy is not None else None), ""
    except Exception as exc:  # noqa: BLE001 - the figure is the stream time
        return None, f"kernel busy time: {type(exc).__name__}: {str(exc)[:280]}"


def _v3_extras(device: Any, call: Any, host_calls: int, model: Any) -> tuple[Any, Any, Any, str]:
    """The cross-check, host cost and peak memory where the device offers them (CUDA); a failure is said
    in the result (``extras_error``), never a failed run: the figure is the device time. The cross-check
    captures no graph of a call that replaces the model's state tensors (``rebound_state``)."""
    from kernelindex.runner.problem_module import rebound_state

    cross = host = peak = None
    try:
        if hasattr(device, "cross_check"):
            cross = device.cross_check(call, no_capture=rebound_state(model, call))
        if hasattr(device, "host_cost"):
            host = device.host_cost(call, host_calls)
        if hasattr(device, "peak_memory_bytes"):
            peak = device.peak_memory_bytes(call)
    except Exception as exc:  # noqa: BLE001
        return cross, host, peak, f"{type(exc).__name__}: {str(exc)[:300]}"
    return cross, host, peak, ""


def _compile_caches(fresh: bool) -> dict[str, Any]:
    """Inductor's caches that would let one problem's compilation reuse another's (off when ``fresh``)."""
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    if fresh:
        for module, name in ((inductor_config, "fx_graph_cache"), (inductor_config, "autotune_local_cache"),
                             (functorch_config, "enable_autograd_cache")):
            if hasattr(module, name):
                setattr(module, name, False)
    return {"fx_graph_cache": getattr(inductor_config, "fx_graph_cache", None),
            "autotune_local_cache": getattr(inductor_config, "autotune_local_cache", None),
            "autograd_cache": getattr(functorch_config, "enable_autograd_cache", None),
            "cache_dir": os.environ.get("TORCHINDUCTOR_CACHE_DIR", "default")}


def _cache_counters() -> dict[str, int]:
    """Inductor's cache hit and miss counters so far (a compile_ns after a hit is not a cold compilation)."""
    try:
        from torch._dynamo.utils import counters
    except ImportError:
        return {}
    return {k: int(v) for k, v in counters["inductor"].items() if "cache" in k}


def _prepared(case: Any, request: dict[str, Any], phases: dict[str, float]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every implementation's first call (compilation: ``prepare KEY`` in ``phases``, with Inductor's cache
    counters), then the checks of them all on the same draws (``checks``, of which ``references``)."""
    from kernelindex.runner.problem_module import check_prepared, first_call

    prepared, counters = {}, {}
    for key in request["implementations"]:
        start, before = time.perf_counter(), _cache_counters()
        prepared[key] = first_call(case, key)
        phases[f"prepare {key}"] = time.perf_counter() - start
        counters[key] = {k: v - before.get(k, 0) for k, v in _cache_counters().items() if v - before.get(k, 0)}
    start = time.perf_counter()
    check_prepared(case, prepared, request.get("checks", 2))
    phases["checks"] = time.perf_counter() - start
    phases["references"] = case.reference_s  # float64 references, within the checks
    return prepared, counters


def serve(request: dict[str, Any]) -> dict[str, Any]:
    """The child's work: load, prepare, time; every implementation gets a result."""
    import torch

    from kernelindex.runner.gpu_lock import GpuLock, cuda_allocations, cuda_release
    from kernelindex.runner.problem_module import Case, backend_flags, load_problem
    from kernelindex.runner.stream_setup import v4_fields
    from kernelindex.runner.timing import TimingPolicy, measure_interleaved

    began = time.perf_counter()
    if request.get("cpu_threads"):
        torch.set_num_threads(int(request["cpu_threads"]))
    caches = _compile_caches(bool(request.get("fresh_compile")))
    cuda = request["device"] == "cuda"
    lock = GpuLock(request.get("gpu_lock"), cuda_release if cuda else None, request.get("lock_waits"),
                   cuda_allocations if cuda else None)
    phases: dict[str, float] = {}  # wall seconds of each part: where a problem's time goes
    module = load_problem(request["source"], request["digest"])
    with lock.hold("device"):
        device = _device(request)
    case = Case(module, device.torch_device, reference_device=request.get("reference_device", "cpu"), lock=lock,
                draw_on_device=bool(request.get("draw_on_device")))
    phases["build"] = time.perf_counter() - began
    prepared, counters = _prepared(case, request, phases)
    passed = {key: p for key, p in prepared.items() if p.verdict.status == "passed"}
    policy = TimingPolicy(**request.get("policy", {}))
    results: dict[str, Any] = {}
    with lock.hold("timing"), _timing_context(device):
        start = time.perf_counter()
        samplers, streams, sets = _samplers(device, case, passed)
        phases["stream setup"], start = time.perf_counter() - start, time.perf_counter()
        measured = measure_interleaved({k: p.call for k, p in passed.items()}, samplers, device, policy) \
            if passed else {}
        samplers.clear()  # the graphs and the sets they hold go before the extras
        if sets is not None:
            sets.release()
        if cuda:
            cuda_release()
        phases["timing"], start = time.perf_counter() - start, time.perf_counter()
        for key, p in prepared.items():
            entry: dict[str, Any] = {"verdict": asdict(p.verdict), "compile_ns": p.compile_ns}
            if key != "eager":
                entry["compile"] = {"lock_wait_ns": p.compile_lock_wait_ns, "compiled_unlocked": p.compiled_unlocked,
                                    "cache_counters": counters.get(key, {})}
            if key in measured:
                cross, host, peak, error = _v3_extras(device, p.call, policy.host_calls, case.model)
                busy, busy_error = _kernel_busy(device, p.call) if key in streams else (None, "")
                entry["timing"] = _timing_json(measured[key], cross, host, peak, v4_fields(streams.get(key), busy))
                if error or busy_error:
                    entry["extras_error"] = "; ".join(e for e in (error, busy_error) if e)
            results[key] = entry
        phases["kernel busy, cross-check, host cost, peak memory"] = time.perf_counter() - start
    held = lock.summary()
    phases["GPU lock waits"] = held["waited_s"]  # within the phases above
    return {"digest": request["digest"], "device": device.name, "backend_flags": backend_flags(),
            "policy": asdict(policy), "implementations": results,
            "phases_s": {k: round(v, 2) for k, v in phases.items()}, "gpu_lock": held,
            "cpu_threads": torch.get_num_threads(), "inputs_drawn_on": case.inputs_drawn_on,
            "compile_caches": caches}


def run_isolated(request: dict[str, Any], time_limit_s: float = DEFAULT_TIME_LIMIT_S,
                 extra_env: dict[str, str] | None = None, wall_limit_s: float | None = None) -> dict[str, Any]:
    """``serve(request)`` in a child process; a status for every failure mode of the child itself.
    ``extra_env``: e.g. ``CUDA_VISIBLE_DEVICES`` for the GPU this child may use. With a GPU lock in the request
    the time limit counts the child's own work: its waits for another process's GPU phase are left out of it
    (a problem stuck in a GPU phase until its own limit does not make the others time out), up to
    ``wall_limit_s`` of wall time in all (the call's budget)."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()} | (extra_env or {})
    waits = None
    if request.get("gpu_lock"):
        handle, waits = tempfile.mkstemp(prefix="ki-lock-waits-")
        os.close(handle)
        request = {**request, "lock_waits": waits}
    began = time.time()
    wall = min(wall_limit_s or float("inf"), float("inf") if waits else time_limit_s)
    # Its own session, so that a kill at the limit takes its helpers (Inductor's compile workers) too.
    child = subprocess.Popen([sys.executable, "-m", "kernelindex.runner.problem_process"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             start_new_session=True)
    payload: str | None = json.dumps(request)
    try:
        while True:
            now = time.time()
            left = min(time_limit_s + waited_s(waits, now) - (now - began), wall - (now - began))
            try:
                stdout, stderr = child.communicate(payload, timeout=max(0.0, min(left, 1.0)) if waits else left)
                break
            except subprocess.TimeoutExpired:
                payload = None
                now = time.time()
                waited = waited_s(waits, now)
                if now - began - waited > time_limit_s or now - began > wall:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(child.pid, signal.SIGKILL)
                    child.communicate()
                    what = f"its time limit ({time_limit_s:g} s)" if now - began - waited > time_limit_s else \
                        f"the wall-time limit it was given ({wall:g} s)"
                    return {"digest": request["digest"], "status": "timeout", "lock_wait_s": round(waited, 1),
                            "detail": f"the problem's process ran past {what} and was killed"
                                      + (f" ({waited:.0f} s waiting for the GPU lock not counted)" if waited else "")}
    finally:
        with contextlib.suppress(ProcessLookupError):  # helpers it left behind
            os.killpg(child.pid, signal.SIGKILL)
        if waits:
            for path in (waits, waits + ".new"):
                with contextlib.suppress(OSError):
                    os.unlink(path)
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if child.returncode != 0 or not lines:
        return {"digest": request["digest"], "status": "runtime_error",
                "detail": f"the problem's process ended with status {child.returncode}: {last_words(stderr)[:400]}",
                "stderr_tail": stderr.strip().splitlines()[-STDERR_TAIL_LINES:]}
    return {"status": "done", **json.loads(lines[-1])}


def last_words(stderr: str) -> str:
    """What a dead process's error output says went wrong: its last exception line (a CUDA error ends with
    advice — "Compile with `TORCH_USE_CUDA_DSA`…" — after the line that names it), with the first failed
    device-side assertion where there is one; else its last line."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    if not lines:
        return "no output"
    named = [line for line in lines if EXCEPTION_LINE.match(line)]
    words = named[-1] if named else lines[-1]
    assertion = next((line for line in lines if "Assertion `" in line), None)
    return f"{words} (first device-side assertion: {assertion[:200]})" if assertion else words


def main() -> None:
    _no_network()
    request = json.loads(sys.stdin.read())
    print(json.dumps(serve(request)), flush=True)


if __name__ == "__main__":
    main()
