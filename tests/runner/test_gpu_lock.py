"""Several problem processes on one GPU (``campaigns/kernelbench.py --workers-per-gpu 2``), on the CPU
test device: every phase that would run work on the GPU holds the exclusive GPU lock, and the recorded holds
of all the problems never overlap; the workers did contend for it (so without it they would have overlapped);
a problem stuck inside a locked phase is killed at its own limit and the others, their waits for the lock not
counted against theirs, still finish; a failing problem does not stop the other worker; a problem that ran
out of memory beside the others is rerun alone, with no other problem running on its GPU meanwhile."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kernelindex.runner.gpu_lock import GpuLock, waited_s

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
KERNELBENCH = ROOT / "src" / "kernelindex" / "campaigns" / "kernelbench.py"


def _problem(forward: str, tag: str = "") -> str:
    return f'''import time
import torch
import torch.nn as nn
# {tag}

class Model(nn.Module):
    def forward(self, x):
        {forward}

def get_inputs():
    return [torch.randn(8)]

def get_init_inputs():
    return []
'''


SLOW = "time.sleep(0.1)\n        return x * 2"  # every call holds the lock 0.1 s: two of them at once contend
PROBLEMS = {
    "level1/1_SlowA.py": _problem(SLOW, "a"),
    "level1/2_SlowB.py": _problem(SLOW, "b"),
    "level1/3_Hang.py": _problem("time.sleep(1000)\n        return x"),  # stuck in its first call, locked
    "level1/4_Quick.py": _problem("return x * 2"),
    "level1/5_Fails.py": _problem("raise ValueError('broken kernel')"),
    "level1/6_Memory.py": _problem("raise RuntimeError('CUDA out of memory. Tried to allocate 1.00 GiB (simulated)')"),
}
# Each slow problem's own work (its lock waits not counted) took ~20 s at 0.2 s a call on 2 loaded cores, against
# 25 s; at 0.1 s a call it is ~11 s, against 20 s: a wider margin, and 5 s less waiting for the stuck one.
TIME_LIMIT_S = 20


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("gpu-lock")
    cases = [{"level": 1, "number": int(f.split("/")[1].split("_")[0]), "file": f, "digest": _digest(s), "source": s,
              "workload": None} for f, s in PROBLEMS.items()]
    (tmp / "cases.json").write_text(json.dumps({"problem_set": "test", "commit": "0" * 40, "cases": cases}))
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(KERNELBENCH), "run", "--cases", str(tmp / "cases.json"),
         "--out", str(tmp / "out"), "--levels", "1", "--impl", "eager", "--test-device-product", "H200",
         "--min-samples", "20", "--warmup-calls", "1", "--warmup-ms", "0", "--time-limit", str(TIME_LIMIT_S),
         "--gpus", "1", "--workers-per-gpu", "2"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    results = {json.loads(p.read_text())["file"]: json.loads(p.read_text())
               for p in (tmp / "out" / "results" / "eager").glob("*.json")}
    environment = json.loads(next((tmp / "out" / "environments").glob("*.json")).read_text())
    return {"results": results, "log": done.stdout, "wall_s": time.monotonic() - began, "environment": environment}


def test_every_problem_has_its_result_and_a_stuck_or_failing_one_stalls_nothing(shared: dict[str, Any]) -> None:
    results = shared["results"]
    assert set(results) == set(PROBLEMS), shared["log"]
    status = {f: (r["status"], r.get("implementations", {}).get("eager", {}).get("verdict", {}).get("status"))
              for f, r in results.items()}
    assert status == {
        "level1/1_SlowA.py": ("done", "passed"), "level1/2_SlowB.py": ("done", "passed"),
        "level1/3_Hang.py": ("timeout", None), "level1/4_Quick.py": ("done", "passed"),
        "level1/5_Fails.py": ("done", "runtime_error"), "level1/6_Memory.py": ("done", "runtime_error")}, shared["log"]
    assert {r["worker"] for r in results.values()} == {0, 1}  # both workers ran problems
    for r in results.values():
        assert r["workers_per_gpu"] == (1 if "ran_alone" in r else 2)
    # The one stuck inside a locked phase was killed at its own limit; whoever waited for the lock meanwhile
    # did not have that wait counted against its own limit, and finished.
    hang = results["level1/3_Hang.py"]
    assert TIME_LIMIT_S <= hang["wall_s"] < TIME_LIMIT_S + 15
    assert shared["environment"]["spec"]["software"]["kernelindex.problem_workers_per_gpu"] == "2"


def test_no_two_problems_locked_phases_overlapped(shared: dict[str, Any]) -> None:
    holds = sorted((acquired, released, f, phase) for f, r in shared["results"].items() if "gpu_lock" in r
                   for phase, _, acquired, released in r["gpu_lock"]["holds"])
    assert {"device", "model to the device", "first call eager", "correctness check", "timing"} <= {h[3] for h in holds}
    for before, after in zip(holds, holds[1:], strict=False):
        assert after[0] >= before[1], f"{after[2]} ({after[3]}) took the GPU before {before[2]} ({before[3]}) let it go"
    # The lock was contended: without it these phases would have run at once.
    assert sum(r["gpu_lock"]["waited_s"] for r in shared["results"].values() if "gpu_lock" in r) > 0.1


def test_a_problem_out_of_memory_beside_others_is_rerun_alone(shared: dict[str, Any]) -> None:
    results = shared["results"]
    alone = results["level1/6_Memory.py"]
    assert "ran_alone" in alone and "out of memory" in alone["implementations"]["eager"]["verdict"]["detail"]
    assert "rerun alone at the end" in shared["log"]
    for f, r in results.items():
        if f != "level1/6_Memory.py":  # nothing else ran on the GPU while it did
            assert r["ended_at"] <= alone["started_at"] or r["started_at"] >= alone["ended_at"], f


def test_the_lock_is_exclusive_across_processes_and_waits_are_reported(tmp_path: Path) -> None:
    """Unit level: a second process blocks on a held lock until it is released, and says it is waiting."""
    path, waits = str(tmp_path / "gpu.lock"), str(tmp_path / "waits")
    lock = GpuLock(path)
    assert lock.acquire("phase")
    child = subprocess.Popen([sys.executable, "-c", (
        "import sys; from kernelindex.runner.gpu_lock import GpuLock; "
        f"lock = GpuLock({path!r}, waits={waits!r}); lock.acquire('x'); lock.release(); "
        "print(lock.summary()['waited_s'])")], stdout=subprocess.PIPE, text=True,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    deadline = time.monotonic() + 60
    while waited_s(waits) < 1.0 and time.monotonic() < deadline:  # it is waiting, and says so
        time.sleep(0.1)
    assert child.poll() is None and waited_s(waits) >= 1.0
    lock.release()
    out, _ = child.communicate(timeout=60)
    assert float(out) >= 1.0 and waited_s(waits) >= 1.0  # the finished wait stays counted
    assert lock.holds[0][0] == "phase" and lock.holds[0][3] >= lock.holds[0][2]


def test_the_tripwire_records_device_allocations_made_without_the_lock() -> None:
    made = [0]
    lock = GpuLock(allocations=lambda: made[0])
    with lock.hold("a"):
        made[0] += 3  # under the lock: fine
    with lock.hold("b"):
        pass
    assert lock.unlocked == []
    made[0] += 2  # a GPU tensor made between two holds: a path the compile hooks missed
    with lock.hold("c"):
        pass
    (phase, start, end, count), = lock.unlocked
    assert (phase, count) == ("c", 2) and lock.holds[1][3] == start <= end == lock.holds[2][1]
    assert lock.summary()["unlocked"][0][0] == "c"


_DEVICE_TENSORS = """
import json, torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.overrides import TorchFunctionMode
from kernelindex.runner.gpu_lock import GpuLock, LockedBackend, install_compile_hooks

made = [0]


class Made(TorchFunctionMode):  # real tensors made: torch.tensor materialises its data even under FakeTensorMode
    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is torch.tensor or (type(out) is torch.Tensor and out.device.type != "meta"):
            made[0] += 1
        return out


hooked = [install_compile_hooks(), install_compile_hooks()]  # twice: wrapped once
from torch._inductor.fx_passes import joint_graph
from torch._inductor.runtime.benchmarking import benchmarker


def inductor(gm, example_inputs):  # the start of Inductor's joint-graph passes, through the module's names
    joint_graph.lazy_init(torch.device("cpu"))
    joint_graph.constant_fold_uniform_value(gm)
    return gm


lock = GpuLock(allocations=lambda: made[0])
backend = LockedBackend(inductor, lock, overlap=True)
for _ in range(2):  # two compilations in one process
    graph = make_fx(lambda x: torch.relu(x) + torch.full([4], 2.0), tracing_mode="fake")(torch.randn(4))
    with Made(), lock.hold("first call"):
        backend(graph, [])
print(json.dumps({"hooked": hooked, "made": made[0], "unlocked": lock.unlocked, "holds": [h[0] for h in lock.holds],
                  "wrapped_once": not hasattr(joint_graph.lazy_init.__wrapped__, "_gpu_lock_phase"),
                  "benchmarker": getattr(benchmarker.benchmark_gpu, "_gpu_lock_phase", None)}))
"""


def test_inductor_device_tensors_made_while_compiling_hold_the_lock() -> None:
    """What the tripwire found on the H200 (one window of 48 allocations in every problem's first compilation, before
    pad-mm's hold; 1-2 more where the graph had scalar constants): Inductor's pattern-matcher set-up (fuse-attention's
    ``torch.tensor`` example inputs, once per process) and the joint graph's constant folding (every compilation)
    make real tensors on the compile's device. On the CPU a count of real tensors made stands in for CUDA's, driven
    by the real torch functions called as Inductor calls them while the GPU is let go (a fresh process: the set-up
    is cached per process): the count never rises outside a hold, the set-up holds once, the folding each time."""
    import os

    done = subprocess.run([sys.executable, "-c", _DEVICE_TENSORS], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["hooked"] == [True, True] and found["wrapped_once"]
    # Inductor's own functools.wraps gives its benchmarker methods a __wrapped__: hooked all the same
    assert found["benchmarker"] == "compile: Inductor benchmark"
    assert found["made"] > 20  # the set-up did make real tensors (26 with torch 2.13; 24 scalars, 48 on CUDA, in 2.11)
    assert found["unlocked"] == []
    one = ["first call", "compile: pattern init", "compile: constant folding", "first call (after compiling)"]
    assert found["holds"] == one + [h for h in one if h != "compile: pattern init"]


def _campaign_module() -> Any:
    from kernelindex.campaigns import kernelbench

    return kernelbench


def test_a_timing_during_another_process_unlocked_gpu_work_is_not_kept() -> None:
    """The campaign's answer to the tripwire: every result on the same GPU whose timing overlapped the window
    is dropped (and rerun alone); the culprit's own timing, later and under its lock, is kept."""
    def result(gpu: int, timing: tuple[float, float], unlocked: list[Any] | None = None, **more: Any) -> Any:
        holds = [["first call eager", timing[0] - 5, timing[0] - 5, timing[0] - 4], ["timing", *timing[:1], *timing]]
        return {"file": "x", "level": 1, "number": 1}, {"gpu_index": gpu, "started_at": 0.0, **more,
                                                        "gpu_lock": {"holds": holds, "unlocked": unlocked or []}}
    written = {"culprit": result(0, (30.0, 31.0), [["first call torch-compile", 10.0, 20.0, 4]]),
               "during": result(0, (15.0, 16.0)), "after": result(0, (21.0, 22.0)),
               "other gpu": result(1, (15.0, 16.0)), "alone": result(0, (15.0, 16.0), ran_alone="rerun alone")}
    found = _campaign_module()._overlapped(written)
    assert set(found) == {"during"} and "without the lock" in found["during"][1]


def test_a_hold_from_another_thread_waits_for_the_holder() -> None:
    """A benchmark Inductor runs off the main thread while the main thread holds the GPU must wait its turn: the
    main thread's hold is never taken over, and the other's hold starts after it ends."""
    import threading

    lock = GpuLock()
    order: list[str] = []
    assert lock.acquire("main")
    other = threading.Thread(target=lambda: (lock.acquire("other"), order.append("other holds"), lock.release()))
    other.start()
    time.sleep(0.3)
    assert lock.held and order == []  # still the main thread's
    lock.release()  # ... a release from the wrong thread would be ignored; this is the holder's
    other.join(timeout=10)
    assert order == ["other holds"] and not lock.held
    (main, _, _, main_end), (name, _, other_start, _) = lock.holds
    assert (main, name) == ("main", "other") and other_start >= main_end


def test_the_calibration_report_splits_each_problem_into_gpu_and_cpu_time() -> None:
    from kernelindex.campaigns import calibration

    def result(median: int, holds: list[Any], waited: float, wall: float) -> dict[str, Any]:
        return {"status": "done", "wall_s": wall, "implementations": {"eager": {
            "verdict": {"status": "passed"}, "timing": {"median_ns": median}}},
            "gpu_lock": {"held_s": sum(h[3] - h[2] for h in holds), "waited_s": waited, "holds": holds, "unlocked": []}}
    shared = {"a/1-1": result(1010, [["first call eager", 0, 0, 2.0], ["timing", 5, 5, 9.0]], 3.0, 30.0),
              "a/1-2": result(2000, [["timing", 0, 1, 5.0]], 0.0, 24.0)}
    found = calibration.report(shared, {"a/1-1": result(1000, [], 0.0, 20.0)}, workers=3, budget=520)
    summary = found["summary"]
    assert (summary["mean_L_s"], summary["mean_U_s"]) == (5.0, 20.5)  # (6 + 4) / 2; (30 - 6 - 3 + 24 - 4) / 2
    assert summary["seconds_per_problem"] == 8.5 and summary["problems_per_call"] == 61  # (5 + 20.5) / 3 > 5
    assert summary["mean_L_by_phase_s"] == {"first call eager": 1.0, "timing": 4.0}
    assert found["problems"][0]["shared_over_alone"] == {"eager": 1.01} and summary["shared_over_alone"]["n"] == 1
