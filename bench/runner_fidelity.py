"""Fidelity of the KernelIndex runner's measurements, on a CUDA GPU. Prints figures; not a test.

1. Copy-bandwidth probe: the runner's probe (graph replay, events inside the graph) against a plain
   loop of large ``torch`` device copies timed with events, in the same process (target: >= 90%).
2. Repeatability: the same case verified twice; medians per implementation within 3%.
3. The runner's median beside ``triton.testing.do_bench``'s median for the same call, as a ratio.

Standalone: ``PYTHONPATH=src python bench/runner_fidelity.py --manifests EXPORT.jsonl``.
``bench/campaign.py`` calls the same functions inside the campaign.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import torch

from kernelindex import registry
from kernelindex.domain.manifests import build
from kernelindex.runner import records
from kernelindex.runner.campaign import available_adapters
from kernelindex.runner.cuda import CudaDevice, GraphSampler, copy_bandwidth, do_bench_median_ns
from kernelindex.runner.timing import TimingPolicy
from kernelindex.runner.verify import Context, case_label, verify_case

COPY_BYTES = 1 << 30


def plain_copy_bandwidth(nbytes: int = COPY_BYTES, repeats: int = 20) -> float:
    """A plain large torch device copy, events around a loop: bytes read + written per second."""
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        dst.copy_(src)
    end.record()
    end.synchronize()
    return 2 * nbytes * repeats / (start.elapsed_time(end) * 1e-3)


def graph_copy_bandwidth(device: CudaDevice, nbytes: int = COPY_BYTES) -> float:
    """The same copy captured in a CUDA graph (a memcpy node): shown for comparison only."""
    src = torch.ones(nbytes, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    sampler = GraphSampler(lambda: dst.copy_(src), device.flush, device.calls_per_sample)
    times = sorted(sampler.sample() + sampler.sample())
    return 2 * nbytes / (times[len(times) // 2] * 1e-9)


def copy_probe(device: CudaDevice) -> dict[str, float]:
    probe = copy_bandwidth(device, COPY_BYTES)
    plain = plain_copy_bandwidth()
    graph = graph_copy_bandwidth(device)
    return {"probe_bytes_per_s": probe, "plain_torch_bytes_per_s": plain, "ratio": probe / plain,
            "graph_memcpy_node_bytes_per_s": graph}


def repeat_case(operation_slug: str, workload: Any, device: CudaDevice, policy: TimingPolicy,
                calls_per_sample: int) -> dict[str, Any]:
    """Verify one case twice in a row with the same adapters; compare the medians."""
    operation = registry.load_operation(operation_slug)
    adapters, skipped = available_adapters(operation, None)
    impls = [(a, records.implementation_manifest(a, operation)) for a in adapters]
    environment = build("ExecutionEnvironment", {"hardware": {"vendor": "NVIDIA", "product": device.name}})
    ctx = Context(operation=operation, protocol=records.protocol_manifest(operation, policy, calls_per_sample),
                  environment=environment, device=device, policy=policy,
                  runner={"name": "fidelity", "key_id": "sha256:" + "0" * 64}, campaign="fidelity",
                  do_bench=do_bench_median_ns)
    medians: dict[str, list[int]] = {}
    runs = []
    for _ in range(2):
        case = verify_case(ctx, workload, impls)
        for o in case.impls:
            runs.append(o.run)
            if o.run is not None and o.run.spec.timing.median_ns is not None:
                medians.setdefault(o.adapter.key, []).append(o.run.spec.timing.median_ns)
    rows = {}
    for key, (first, second) in ((k, v) for k, v in medians.items() if len(v) == 2):
        rows[key] = {"first_ns": first, "second_ns": second, "difference": abs(first - second) / min(first, second)}
    return {"operation": operation_slug, "case": case_label(workload), "implementations": rows, "skipped": skipped,
            "runs": runs}


def do_bench_ratios(runs: list[Any], labels: dict[str, str]) -> list[dict[str, Any]]:
    """Runner median / do_bench median for every timed run."""
    rows = []
    for run in runs:
        timing = run.spec.timing
        bench = timing.secondary.get("do_bench_median_ns")
        if timing.median_ns and bench:
            rows.append({"run": labels.get(run.spec.source.external_id, run.spec.source.external_id),
                         "runner_ns": timing.median_ns, "do_bench_ns": bench, "host_ns": timing.host_ns,
                         "ratio": timing.median_ns / bench})
    return rows


def print_fidelity(copy: dict[str, float], repeats: list[dict[str, Any]], ratios: list[dict[str, Any]]) -> None:
    print("\n== Fidelity ==")
    verdict = "ok" if copy["ratio"] >= 0.9 else "BELOW 90%"
    print(f"copy probe {copy['probe_bytes_per_s'] / 1e9:,.0f} GB/s vs plain torch copy "
          f"{copy['plain_torch_bytes_per_s'] / 1e9:,.0f} GB/s: {copy['ratio']:.3f} ({verdict}); the same copy "
          f"as a CUDA-graph memcpy node: {copy['graph_memcpy_node_bytes_per_s'] / 1e9:,.0f} GB/s")
    for rep in repeats:
        for key, row in rep["implementations"].items():
            ok = "ok" if row["difference"] <= 0.03 else "OVER 3%"
            print(f"repeat {rep['operation']} {rep['case']} {key}: {row['first_ns']} ns / {row['second_ns']} ns, "
                  f"difference {row['difference']:.2%} ({ok})")
    for row in ratios:
        print(f"runner/do_bench {row['run']}: {row['runner_ns']} / {row['do_bench_ns']} ns = {row['ratio']:.3f}"
              f" (host {row['host_ns']} ns)")


def _workloads(path: Path, slug: str) -> list[Any]:
    from kernelindex.domain.manifests import digest_of, parse_manifest_text

    wanted = digest_of(registry.load_operation(slug))
    found = []
    for line in path.read_bytes().splitlines():
        data = json.loads(line)
        if data.get("kind") == "WorkloadCase" and data["spec"]["operation"] == wanted:
            found.append(parse_manifest_text(line))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifests", type=Path, required=True, help="JSON Lines export with the workload cases")
    parser.add_argument("--calls-per-sample", type=int, default=10)
    args = parser.parse_args(argv)
    device = CudaDevice(calls_per_sample=args.calls_per_sample)
    policy = TimingPolicy()
    copy = copy_probe(device)
    repeats, ratios = [], []
    for slug, axes in (("rope", {"seq": 2048, "hidden": 8192}), ("embedding", {"batch": 32, "vocab": 1024})):
        workload = next(w for w in _workloads(args.manifests, slug)
                        if all(w.spec.axes.get(k) == v for k, v in axes.items()))
        rep = repeat_case(slug, workload, device, policy, args.calls_per_sample)
        repeats.append(rep)
        ratios += do_bench_ratios([r for r in rep.pop("runs") if r is not None], {})
    print_fidelity(copy, repeats, ratios)
    return 0


if __name__ == "__main__":
    sys.exit(main())
