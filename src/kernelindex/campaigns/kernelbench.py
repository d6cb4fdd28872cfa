"""The KernelBench campaign (issue 24 item 5): every problem of the newest problem set, verified and timed by
the generic problem-module adapter (kernelindex.runner.problem_module) under runner protocol v4 (stream time;
kernelindex.runner.problem_stream), each problem in its own process with a time limit and no network; the results
become signed runner bundles (kernelindex.runner.problem_bundle) that `ki publish` and start-up verify like
every other runner bundle. docs/sources-kernelbench.md, "The H200 campaign", says how it is run.

Prepare here (CPU), from the shipped data and the catalog's own mapping: each case carries the
problem file and the operation and workload manifests the import made of it (byte for byte):

    ki runner campaign carry … (writes kernelbench-cases.json into the carry)

On the GPU machine (resumable: a problem with a v4 result file is skipped; a v3 one is measured again):

    python3 -m kernelindex.campaigns.kernelbench run --cases kernelbench-cases.json --out OUT \\
        --levels 1 --impl eager,torch-compile [--skip N] [--max N] [--budget SECONDS] \\
        [--workers-per-gpu K]          # K problem processes share each GPU under the GPU lock
        [--test-device-product H200]   # a CPU rehearsal: real problems, nominal times

writes OUT/environments/<digest>.json (the probe, once per call, with PyTorch's backend flags) and
OUT/results/<impl-set>/<level>-<number>.json per problem. Then, on either machine:

    python3 -m kernelindex.campaigns.kernelbench bundle --cases kernelbench-cases.json --results OUT \\
        --impl eager,torch-compile --levels 1 --key keys/runner.key --bundle OUT/bundles/NAME
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import threading
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

MIN_PROBLEM_S = 30.0  # a problem is not started with less of the call's budget left
GPU_LOCK = ("an exclusive lock per GPU (fcntl.flock on a file) held by each problem process around every phase "
            "that runs work on the GPU: moving the model and inputs, input draws, float64 references on the GPU, "
            "correctness checks, first calls, Inductor's compile-time benchmarks, rotation sets, warm-up, timing, "
            "kernel busy time and v3's extras")


def prepare(out: Path, data_path: Path | None = None, counted_path: Path | None = None) -> dict[str, int]:
    from kernelindex.domain.manifests import digest_of
    from kernelindex.sources.kernelbench import map_kernelbench, read_kernelbench, shipped_path
    from kernelindex.sources.kernelbench.problem_file import problem_of

    path = data_path or shipped_path()
    data = read_kernelbench(path.read_bytes(), str(path))
    counted = json.loads(counted_path.read_text())["problems"] if counted_path else None
    newest = max(data.timings, key=lambda t: t.commit_date).problems
    mapped = map_kernelbench(data, counted)
    by_digest: dict[str, Any] = {digest_of(m): m for m in mapped.manifests
                                 if m.kind in ("WorkloadCase", "OperationSpec")}
    workloads = {m.metadata.labels.get("kernelbench_file_digest"): m for m in by_digest.values()
                 if m.kind == "WorkloadCase"}
    cases = []
    for file, digest in sorted(data.sets[newest].files.items()):
        problem = problem_of(file, data.problems[digest])
        case: dict[str, Any] = {"level": problem.level, "number": problem.number, "file": file, "digest": digest,
                                "source": data.problems[digest], "workload": None}
        workload = workloads.get(digest)
        if workload is not None:
            operation = by_digest[workload.spec.operation]
            case.update(workload=digest_of(workload), workload_manifest=_plain(workload),
                        operation_manifest=_plain(operation))
        cases.append(case)
    cases.sort(key=lambda c: (c["level"], c["number"]))
    out.write_text(json.dumps({"problem_set": newest, "commit": data.sets[newest].commit, "cases": cases}) + "\n")
    return {"cases": len(cases), "without_workload": sum(c["workload"] is None for c in cases)}


def _plain(manifest: Any) -> dict[str, Any]:
    return manifest.model_dump(mode="json", exclude_none=True, by_alias=True)


def _environment(args: argparse.Namespace) -> dict[str, Any]:
    """The probe of this call's device as an ExecutionEnvironment, PyTorch's backend flags in its software."""
    from kernelindex.runner.environment import environment_manifest
    from kernelindex.runner.problem_module import backend_flags

    if args.test_device_product:
        from kernelindex.runner.cpu_device import cpu_test_probe

        found = cpu_test_probe(args.test_device_product)
    else:
        import torch

        from kernelindex.runner.cuda import CudaDevice, copy_bandwidth, read_write_bandwidth
        from kernelindex.runner.environment import probe

        device = CudaDevice()
        bandwidth = copy_bandwidth(device)
        found = probe(bandwidth, *read_write_bandwidth(device))
        del device
        torch.cuda.empty_cache()
    found.software.update(backend_flags())
    found.software["kernelindex.problem_workers_per_gpu"] = str(args.workers_per_gpu)
    if args.workers_per_gpu > 1:
        found.software["kernelindex.gpu_lock"] = GPU_LOCK
    return _plain(environment_manifest(found))


def _policy(args: argparse.Namespace) -> dict[str, Any]:
    from kernelindex.runner.timing import TimingPolicy

    return asdict(TimingPolicy(min_samples=args.min_samples, time_budget_ns=int(args.case_seconds * 1e9),
                               hard_limit_ns=int(args.hard_limit * 1e9), host_calls=args.host_calls,
                               warmup_calls=args.warmup_calls, warmup_time_ns=int(args.warmup_ms * 1e6)))


def _probe_once(args: argparse.Namespace) -> str:
    """Probe the device (GPU 0 of the call) once, record it under environments/, return its digest."""
    from kernelindex.domain.manifests import digest_of, parse_manifest

    manifest = _environment(args)
    environment = digest_of(parse_manifest(manifest))
    (Path(args.out) / "environments").mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "environments" / f"{environment[7:]}.json").write_text(json.dumps(manifest) + "\n")
    return environment


class _Queue:
    """The problems left, shared by the workers; stops handing out problems once the budget is spent. A problem
    that ran out of GPU memory beside other workers is handed out again at the end, to run alone on its GPU."""

    def __init__(self, args: argparse.Namespace, cases: list[dict[str, Any]], folder: Path) -> None:
        self.args, self.folder, self.start = args, folder, time.monotonic()
        self.cases = [c for c in cases if not has_current_result(folder / f"{c['level']}-{c['number']}.json")]
        self.alone: list[tuple[dict[str, Any], str]] = []  # (case, why) to rerun alone on its GPU
        self.written: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}  # result file → (case, result)
        self.lock = threading.Lock()
        self.stopped = False

    def next(self) -> tuple[dict[str, Any], float, str] | None:
        with self.lock:
            remaining = self.args.budget - (time.monotonic() - self.start) if self.args.budget else float("inf")
            if self.stopped or not (self.cases or self.alone):
                return None
            if remaining < MIN_PROBLEM_S:
                left = (self.cases or [c for c, _ in self.alone])[0]
                print(f"stop before {left['file']}: the budget is spent", flush=True)
                self.stopped = True
                return None
            if self.cases:
                return self.cases.pop(0), remaining, ""
            case, why = self.alone.pop(0)
            return case, remaining, why

    def again_alone(self, case: dict[str, Any], why: str) -> None:
        with self.lock:
            self.alone.append((case, why))


def has_current_result(path: Path) -> bool:
    """A result this call need not redo: one measured under the current protocol (a v3 result is measured again)."""
    from kernelindex.runner.records import STREAM_VERSION

    try:
        return json.loads(path.read_text()).get("runner_protocol") == STREAM_VERSION
    except (OSError, ValueError):  # none, or cut short while written: measured again
        return False


def _out_of_memory(result: dict[str, Any]) -> str:
    """The first 'out of memory' failure in a result (a GPU shared with other workers can cause it; a child
    killed with status -9 is the host's memory killer's), or ''."""
    details = [result.get("detail", "")]
    details += [e["verdict"].get("detail", "") for e in result.get("implementations", {}).values()]
    return next((d for d in details if "out of memory" in (d or "").lower() or "with status -9" in (d or "")), "")


@contextlib.contextmanager
def _gpu_share(path: Path, alone: bool) -> Any:
    """Shared (a worker's problem) or exclusive (a problem rerun alone) hold on the whole GPU: an exclusive one
    waits for the problems running on it to end and keeps new ones out until it ends."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


def _child_env(args: argparse.Namespace, gpu: int) -> dict[str, str]:
    """Each child's environment: its GPU, its share of the host's cores (intra-op and Inductor's compile
    threads), one Inductor cache directory for the call's workers."""
    env = {} if args.test_device_product else {"CUDA_VISIBLE_DEVICES": str(gpu)}
    threads = str(_threads(args))
    env.update({"OMP_NUM_THREADS": threads, "TORCHINDUCTOR_COMPILE_THREADS": threads})
    env["TORCHINDUCTOR_CACHE_DIR"] = os.environ.get("TORCHINDUCTOR_CACHE_DIR") or str(Path(args.out) / "inductor-cache")
    return env


def _threads(args: argparse.Namespace) -> int:
    if args.cpu_threads:
        return int(args.cpu_threads)
    return max(1, (os.cpu_count() or 1) // (args.gpus * args.workers_per_gpu))


def _work(queue: _Queue, worker: int, base: dict[str, Any], extra: dict[str, Any]) -> None:
    from kernelindex.runner.problem_process import run_isolated

    args = queue.args
    gpu = worker % args.gpus
    share = Path(args.out) / f"gpu{gpu}.share.lock"
    while (item := queue.next()) is not None:
        case, limit, alone = item
        lock = str(Path(args.out) / f"gpu{gpu}.lock") if base["gpu_lock"] else None
        request = {**base, "source": case["source"], "digest": case["digest"], "gpu_lock": lock}
        began = time.monotonic()
        with _gpu_share(share, bool(alone)):
            started, started_at = time.monotonic(), time.time()
            result = run_isolated(request, time_limit_s=args.time_limit, extra_env=_child_env(args, gpu),
                                  wall_limit_s=limit - (started - began))
        if result.get("status") == "timeout" and "wall-time limit" in result.get("detail", ""):
            print(f"{case['file']}: cut by the call's budget ({limit:.0f} s), not recorded: the next call redoes it",
                  flush=True)
            continue
        memory = _out_of_memory(result)
        if memory and args.workers_per_gpu > 1 and not alone:
            print(f"[worker {worker}] {case['file']}: out of GPU memory beside other workers; rerun alone at the end "
                  f"({memory[:120]})", flush=True)
            queue.again_alone(case, f"out of GPU memory beside other workers ({memory[:200]})")
            continue
        result.update({**extra, "file": case["file"], "digest": case["digest"], "workload": case["workload"],
                       "wall_s": round(time.monotonic() - started, 1), "gpu_index": gpu, "worker": worker,
                       "started_at": round(started_at, 3), "ended_at": round(time.time(), 3),
                       "waited_for_gpu_s": round(started - began, 1),
                       "observed_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")})
        if alone:
            result["ran_alone"] = f"rerun alone on its GPU: {alone[:300]}"
            result["workers_per_gpu"] = 1
        path = queue.folder / f"{case['level']}-{case['number']}.json"
        path.write_text(json.dumps(result, indent=1) + "\n")
        with queue.lock:
            queue.written[str(path)] = (case, result)
        verdicts = {k: v["verdict"]["status"] for k, v in result.get("implementations", {}).items()}
        print(f"[gpu {gpu} worker {worker}] {case['file']}: {result.get('status')} "
              f"{verdicts or result.get('detail', '')} {result['wall_s']} s {result.get('phases_s', '')}", flush=True)


def run(args: argparse.Namespace) -> None:
    """Each problem in its own process; ``--gpus N --workers-per-gpu K`` runs N×K at once, K per GPU
    (CUDA_VISIBLE_DEVICES) sharing it under the GPU lock (with K = 1 the lock is not taken)."""
    from kernelindex.runner.campaign import campaign_id
    from kernelindex.runner.records import STREAM_VERSION

    document = json.loads(Path(args.cases).read_text())
    levels = {int(x) for x in args.levels.split(",")}
    impls = args.impl.split(",")
    folder = Path(args.out) / "results" / "+".join(impls)
    folder.mkdir(parents=True, exist_ok=True)
    cases = [c for c in document["cases"] if c["level"] in levels][args.skip:]
    queue = _Queue(args, cases[: args.max] if args.max else cases, folder)
    if not queue.cases:
        return
    policy = _policy(args)
    on_cpu = bool(args.test_device_product)
    reference = args.reference_device or ("cpu" if on_cpu else "cuda")
    base = {"implementations": impls, "checks": 2, "policy": policy, "reference_device": reference,
            "device": "cpu" if on_cpu else "cuda", "product": args.test_device_product,
            "gpu_lock": args.workers_per_gpu > 1, "cpu_threads": _threads(args),
            "draw_on_device": not args.inputs_on_cpu, "fresh_compile": not args.compile_caches}
    extra = {"environment": _probe_once(args), "campaign": campaign_id(), "policy": policy,
             "implementations_asked": impls, "workers_per_gpu": args.workers_per_gpu,
             "runner_protocol": STREAM_VERSION}  # v4 on CUDA and the CPU test device (problem_process)
    while True:
        workers = [threading.Thread(target=_work, args=(queue, worker, base, extra))
                   for worker in range(args.gpus * args.workers_per_gpu)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        again = _overlapped(queue.written)
        if not again or queue.stopped:
            break
        for path, (case, why) in again.items():  # not recorded: rerun alone, or by the next call
            Path(path).unlink(missing_ok=True)
            del queue.written[path]
            print(f"{case['file']}: {why}; rerun alone", flush=True)
            queue.again_alone(case, why)


def _overlapped(written: dict[str, tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, tuple[dict[str, Any], str]]:
    """Results whose timing ran while another process on the same GPU made GPU tensors without the lock (its
    tripwire, ``gpu_lock.unlocked``): their figures may carry that work, so they are not kept."""
    windows = [(r["gpu_index"], path, max(start, r.get("started_at", 0.0)), end) for path, (_, r) in written.items()
               for _, start, end, _ in (r.get("gpu_lock") or {}).get("unlocked", [])]
    found: dict[str, tuple[dict[str, Any], str]] = {}
    for path, (case, r) in written.items():
        if r.get("ran_alone"):
            continue
        timing = [(a, b) for phase, _, a, b in (r.get("gpu_lock") or {}).get("holds", []) if phase == "timing"]
        for gpu, culprit, start, end in windows:
            if gpu == r["gpu_index"] and culprit != path and any(a < end and start < b for a, b in timing):
                found[path] = (case, f"timed while {Path(culprit).name}'s process made GPU tensors without the lock")
                break
    return found


def bundle(args: argparse.Namespace) -> dict[str, Any]:
    from kernelindex.domain.manifests import ExecutionEnvironment, digest_of, parse_manifest
    from kernelindex.runner.problem_bundle import problem_runs, write_problem_bundle
    from kernelindex.runner.problem_records import ProblemCase
    from kernelindex.trust import keys

    levels = {int(x) for x in args.levels.split(",")}
    cases = {c["digest"]: ProblemCase.from_json(c) for c in json.loads(Path(args.cases).read_text())["cases"]
             if c["workload"] is not None and c["level"] in levels}
    environments: dict[str, ExecutionEnvironment] = {}
    for path in sorted((Path(args.results) / "environments").glob("*.json")):
        manifest = parse_manifest(json.loads(path.read_text()))
        assert isinstance(manifest, ExecutionEnvironment)
        environments[digest_of(manifest)] = manifest
    folder = Path(args.results) / "results" / args.impl.replace(",", "+")
    results = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    results = [r for r in results if r["digest"] in cases]
    runner = keys.load_public_key(args.key.with_name(keys.PUBLIC_KEY_FILE))
    runs = problem_runs(cases, results, environments, {"name": runner.name, "key_id": runner.key_id})
    written = write_problem_bundle(runs, args.bundle, args.key, runner.name)
    return {"bundle": str(args.bundle), "digest": written.digest, "problems": len(results),
            "runs": len(runs.runs()), "statuses": runs.statuses}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", type=Path, default=Path("kernelbench-cases.json"))
    p.add_argument("--data", type=Path, help="a kernelbench.jsonl.zst (default: the shipped one)")
    p.add_argument("--counted", type=Path, help="the problems' tensors (default: registry problems.json)")
    r = sub.add_parser("run")
    r.add_argument("--cases", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--levels", default="1")
    r.add_argument("--impl", default="eager,torch-compile")
    r.add_argument("--test-device-product", default="",
                   help="CPU rehearsal: real problems on CPU tensors, nominal times, announcing this product")
    r.add_argument("--gpus", type=int, default=1, help="GPUs, one problem process per GPU (× --workers-per-gpu)")
    r.add_argument("--workers-per-gpu", type=int, default=1,
                   help="problem processes sharing each GPU, every GPU phase under an exclusive GPU lock")
    r.add_argument("--cpu-threads", type=int, default=0,
                   help="intra-op and compile threads per child (default: the host's cores / all workers)")
    r.add_argument("--reference-device", default="", choices=("", "cpu", "cuda"),
                   help="where the float64 reference runs first (default: the GPU, the CPU where it does not fit; "
                        "the CPU in a rehearsal)")
    r.add_argument("--inputs-on-cpu", action="store_true",
                   help="draw inputs on the CPU as the file writes it (default: get_inputs() on the GPU)")
    r.add_argument("--compile-caches", action="store_true",
                   help="keep Inductor's FX-graph/autotune caches (default off: each problem compiles its own)")
    r.add_argument("--skip", type=int, default=0)
    r.add_argument("--max", type=int, default=0)
    r.add_argument("--time-limit", type=float, default=300.0, help="seconds per problem (its process is killed)")
    r.add_argument("--case-seconds", type=float, default=1.0, help="timing budget per problem, all implementations")
    r.add_argument("--hard-limit", type=float, default=20.0, help="seconds per problem before min_samples stops it")
    r.add_argument("--min-samples", type=int, default=50,
                   help="replays per implementation before the stop rule applies (v4: each the mean of K >= 32 "
                        "calls; the curated operations' campaign steps ask 50 too)")
    r.add_argument("--host-calls", type=int, default=20)
    r.add_argument("--warmup-calls", type=int, default=10)
    r.add_argument("--warmup-ms", type=float, default=50.0, help="warm-up time after the calls, per implementation")
    r.add_argument("--budget", type=float, default=0.0, help="stop starting problems when this many seconds are spent")
    b = sub.add_parser("bundle")
    b.add_argument("--cases", required=True)
    b.add_argument("--results", required=True, help="the run's --out folder")
    b.add_argument("--impl", default="eager,torch-compile")
    b.add_argument("--levels", default="1,2,3")
    b.add_argument("--key", type=Path, required=True, help="the runner's private key (runner.pub beside it)")
    b.add_argument("--bundle", type=Path, required=True, help="a new folder for the bundle")
    args = parser.parse_args()
    if args.command == "prepare":
        print(json.dumps(prepare(args.out, args.data, args.counted)))
    elif args.command == "run":
        run(args)
    else:
        print(json.dumps(bundle(args)))


if __name__ == "__main__":
    main()
