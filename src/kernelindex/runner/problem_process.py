"""Run one problem module in its own process, with a time limit and no network.

``run_isolated`` starts ``python -m kernelindex.runner.problem_process`` with the request on stdin
(the file's text and its digest, the device, the implementations, the timing policy) and an
environment without proxies; the child refuses every socket before it loads the problem, then
prepares each implementation (compile, check against the reference execution), times the passed
ones through ``timing.measure_interleaved`` and prints one JSON result. A child that runs past the
time limit is killed and reported as ``timeout``; one that dies is ``runtime_error`` with its last
words. The result carries the backend flags (TF32, cuDNN) the checks and the timing ran under.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import asdict
from typing import Any

NO_NETWORK = "network disabled for problem modules"
DEFAULT_TIME_LIMIT_S = 600


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
    if request["device"] == "cuda":
        from kernelindex.runner.cuda import CudaDevice

        return CudaDevice()
    from kernelindex.runner.cpu_device import CpuTestDevice

    return CpuTestDevice(request.get("product", "cpu"))


def _timing_context(device: Any) -> contextlib.AbstractContextManager[object]:
    context = getattr(device, "timing_context", None)
    return context() if context is not None else contextlib.nullcontext()


def _timing_json(m: Any, cross: tuple[str, float, str | None] | None, host: tuple[float, float] | None,
                 peak: int | None) -> dict[str, Any]:
    """Everything a run's timing and its samples file need (``problem_records`` writes them): the summary,
    every sample, each sample's trace (span, syncs, device-to-host copies), the cross-check and host cost."""
    return {**m.summary().as_ns(), "samples": len(m.samples), "method": m.method, "stop_reason": m.stop_reason,
            "fallback_reason": m.fallback_reason, "warmup_calls": m.warmup_calls,
            "device_ns": [round(v) for v in m.samples], "host_ns": [round(v) for v in m.host_samples],
            "activities": [[a.span_ns, a.syncs, a.device_to_host_copies] for a in m.activities],
            "cross_check": list(cross) if cross else None, "host_cost": list(host) if host else None,
            "peak_bytes": peak}


def _v3_extras(device: Any, call: Any, host_calls: int) -> tuple[Any, Any, Any, str]:
    """The cross-check, host cost and peak memory where the device offers them (CUDA); a failure is said
    in the result (``extras_error``), never a failed run: the figure is the device time."""
    cross = host = peak = None
    try:
        if hasattr(device, "cross_check"):
            cross = device.cross_check(call)
        if hasattr(device, "host_cost"):
            host = device.host_cost(call, host_calls)
        if hasattr(device, "peak_memory_bytes"):
            peak = device.peak_memory_bytes(call)
    except Exception as exc:  # noqa: BLE001
        return cross, host, peak, f"{type(exc).__name__}: {str(exc)[:300]}"
    return cross, host, peak, ""


def serve(request: dict[str, Any]) -> dict[str, Any]:
    """The child's work: load, prepare, time; every implementation gets a result."""
    from kernelindex.runner.problem_module import Case, backend_flags, load_problem, prepare
    from kernelindex.runner.timing import TimingPolicy, measure_interleaved

    began = time.perf_counter()
    phases: dict[str, float] = {}  # wall seconds of each part: where a problem's time goes
    module = load_problem(request["source"], request["digest"])
    device = _device(request)
    case = Case(module, device.torch_device, reference_device=request.get("reference_device", "cpu"))
    phases["build"] = time.perf_counter() - began
    prepared = {}
    for key in request["implementations"]:
        start = time.perf_counter()
        prepared[key] = prepare(case, key, request.get("checks", 2))
        phases[f"prepare {key}"] = time.perf_counter() - start
    phases["references"] = case.reference_s  # float64 references, within the prepares
    passed = {key: p for key, p in prepared.items() if p.verdict.status == "passed"}
    policy = TimingPolicy(**request.get("policy", {}))
    results: dict[str, Any] = {}
    with _timing_context(device):
        start = time.perf_counter()
        measured = measure_interleaved({k: p.call for k, p in passed.items()},
                                       {k: device.sampler(p.call) for k, p in passed.items()}, device, policy) \
            if passed else {}
        phases["timing"], start = time.perf_counter() - start, time.perf_counter()
        for key, p in prepared.items():
            entry: dict[str, Any] = {"verdict": asdict(p.verdict), "compile_ns": p.compile_ns}
            if key in measured:
                cross, host, peak, error = _v3_extras(device, p.call, policy.host_calls)
                entry["timing"] = _timing_json(measured[key], cross, host, peak)
                if error:
                    entry["extras_error"] = error
            results[key] = entry
        phases["cross-check, host cost, peak memory"] = time.perf_counter() - start
    return {"digest": request["digest"], "device": device.name, "backend_flags": backend_flags(),
            "policy": asdict(policy), "implementations": results,
            "phases_s": {k: round(v, 2) for k, v in phases.items()}}


def run_isolated(request: dict[str, Any], time_limit_s: float = DEFAULT_TIME_LIMIT_S,
                 extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    """``serve(request)`` in a child process; a status for every failure mode of the child itself.
    ``extra_env``: e.g. ``CUDA_VISIBLE_DEVICES`` for the GPU this child may use."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()} | (extra_env or {})
    try:
        done = subprocess.run([sys.executable, "-m", "kernelindex.runner.problem_process"], input=json.dumps(request),
                              capture_output=True, text=True, timeout=time_limit_s, env=env)
    except subprocess.TimeoutExpired:
        return {"digest": request["digest"], "status": "timeout",
                "detail": f"the problem's process ran past its time limit ({time_limit_s:g} s) and was killed"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"digest": request["digest"], "status": "runtime_error",
                "detail": f"the problem's process ended with status {done.returncode}: {last[:300]}"}
    return {"status": "done", **json.loads(lines[-1])}


def main() -> None:
    _no_network()
    request = json.loads(sys.stdin.read())
    print(json.dumps(serve(request)), flush=True)


if __name__ == "__main__":
    main()
