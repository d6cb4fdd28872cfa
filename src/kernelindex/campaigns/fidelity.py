"""Fidelity of the campaign's figures, printed for the campaign ledger.

    ki runner campaign fidelity select --summaries OUT/summary-*.json --every 10 --out OUT/sample.json
        # every 10th reference case (sorted by operation and case): the 10% re-verified elsewhere
    ki runner campaign fidelity compare --first OUT/summary-a.json ... --second OUT/summary-b.json \\
        [--impl torch-compile]
        # medians of the same (operation, case, region, implementation) in two processes: within 3%?
    ki runner campaign fidelity cupti --cases out/campaign/cases --summaries ... --sample OUT/sample.json
        # runner median vs the sum of the call's kernel durations from the PyTorch profiler (CUPTI),
        # L2 flushed before each profiled call: within 5%?
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

Key = tuple[str, str, str, str]


def rows(paths: list[Path]) -> dict[Key, dict[str, Any]]:
    found = {}
    for path in paths:
        for slug, op in json.loads(path.read_text())["operations"].items():
            for row in op["runs"]:
                found[(slug, row["case"], row["region"], row["implementation"])] = row
    return found


def select(paths: list[Path], every: int) -> list[list[str]]:
    """Every ``every``-th (operation, case), sorted; at least one per 10 cases overall."""
    cases = sorted({(k[0], k[1]) for k in rows(paths)})
    return [list(c) for c in cases[::every]]


def compare(first: list[Path], second: list[Path], impl: str | None, limit: float) -> dict[str, Any]:
    a, b = rows(first), rows(second)
    out = []
    for key in sorted(set(a) & set(b)):
        if impl and key[3] != impl:
            continue
        x, y = a[key]["median_ns"], b[key]["median_ns"]
        if x and y:
            out.append({"key": key, "first_ns": x, "second_ns": y, "difference": abs(x - y) / min(x, y)})
    within = [r for r in out if r["difference"] <= limit]
    for r in out:
        flag = "ok" if r["difference"] <= limit else f"OVER {limit:.0%}"
        print(f"{' · '.join(r['key'])}: {r['first_ns']} / {r['second_ns']} ns, {r['difference']:.2%} {flag}")
    worst = max((r["difference"] for r in out), default=0.0)
    print(f"{len(within)} of {len(out)} within {limit:.0%}; largest difference {worst:.2%}")
    return {"pairs": len(out), "within": len(within), "largest": worst}


def _kernel_sum_us(call: Any, flush: Any, calls: int) -> list[float]:
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    sums = []
    for _ in range(calls):
        flush()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            call()
            torch.cuda.synchronize()
        sums.append(sum(e.time_range.elapsed_us() for e in prof.events() if e.device_type == DeviceType.CUDA))
    return sums


def cupti(cases: Path, summaries: list[Path], sample: Path, calls: int) -> dict[str, Any]:
    from kernelindex.campaigns.measure import load_cases
    from kernelindex.runner.adapters import select as select_adapters
    from kernelindex.runner.campaign import operation_def
    from kernelindex.runner.cuda import CudaDevice
    from kernelindex.runner.inputs import make_inputs
    from kernelindex.runner.regions import prepare_inputs, region_call
    from kernelindex.runner.verify import TIMING_SEED, case_label

    found, device, out = rows(summaries), CudaDevice(), []
    for slug, label in (tuple(x) for x in json.loads(sample.read_text())):
        op = operation_def(slug)
        workload = next(w for w in load_cases(cases, slug)[0] if case_label(w) == label)
        for adapter in select_adapters(op, None):
            for region in op.regions:
                row = found.get((slug, label, region, adapter.key))
                if not row or row["status"] != "passed" or adapter.missing():
                    continue
                adapter.start_case()
                with device.timing_context():
                    inputs = make_inputs(op, workload, TIMING_SEED, "cuda")
                    grads = op.grads_of(inputs)
                    prepare_inputs(inputs, grads)
                    call = region_call(region, adapter.bind(inputs), inputs, grads)
                    for _ in range(3):
                        call()
                    kernel_us = statistics.median(_kernel_sum_us(call, device.flush, calls))
                ratio = row["median_ns"] / (kernel_us * 1000)
                out.append({"key": [slug, label, region, adapter.key], "runner_ns": row["median_ns"],
                            "kernel_sum_ns": round(kernel_us * 1000), "ratio": ratio})
                print(f"{slug} · {label} · {region} · {adapter.key}: runner {row['median_ns']} ns, kernels "
                      f"{kernel_us * 1000:.0f} ns, ratio {ratio:.3f}{'' if abs(ratio - 1) <= 0.05 else '  OVER 5%'}",
                      flush=True)
                del call, inputs
                device.release()
    within = [r for r in out if abs(r["ratio"] - 1) <= 0.05]
    print(f"CUPTI: {len(within)} of {len(out)} runs within 5% of the sum of their kernels")
    return {"runs": out, "within": len(within)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ki runner campaign fidelity", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("select")
    s.add_argument("--summaries", type=Path, nargs="+", required=True)
    s.add_argument("--every", type=int, default=10)
    s.add_argument("--out", type=Path, required=True)
    c = sub.add_parser("compare")
    c.add_argument("--first", type=Path, nargs="+", required=True)
    c.add_argument("--second", type=Path, nargs="+", required=True)
    c.add_argument("--impl", default=None)
    c.add_argument("--limit", type=float, default=0.03)
    k = sub.add_parser("cupti")
    k.add_argument("--cases", type=Path, required=True)
    k.add_argument("--summaries", type=Path, nargs="+", required=True)
    k.add_argument("--sample", type=Path, required=True)
    k.add_argument("--calls", type=int, default=10)
    k.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.command == "select":
        chosen = select(args.summaries, args.every)
        args.out.write_text(json.dumps(chosen, indent=1))
        print(f"{len(chosen)} cases: {chosen}")
    elif args.command == "compare":
        compare(args.first, args.second, args.impl, args.limit)
    else:
        result = cupti(args.cases, args.summaries, args.sample, args.calls)
        if args.out:
            args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
