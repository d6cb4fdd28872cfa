"""The H200 verification campaign: rope (7 reference cases) and embedding (16), forward, every
available implementation, one signed bundle per operation, then the fidelity checks. One process.

    PYTHONPATH=src python bench/campaign.py --manifests EXPORT.jsonl --key .keys/runner.key --out OUT_DIR

EXPORT.jsonl is a ``ki export`` of a catalog with the Liger data imported, so the workload cases
(and their digests) are exactly the catalog's. ``--smoke`` runs one case per operation.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parent))

from runner_fidelity import copy_probe, do_bench_ratios, print_fidelity, repeat_case  # noqa: E402

from kernelindex import registry  # noqa: E402
from kernelindex.runner.campaign import outcome_rows, select_workloads  # noqa: E402
from kernelindex.runner.report import print_results, workloads_from_file  # noqa: E402
from kernelindex.runner.session import run_session  # noqa: E402
from kernelindex.runner.timing import TimingPolicy  # noqa: E402
from kernelindex.trust import keys  # noqa: E402

SMOKE = {"rope": "seq=2048,hidden=8192", "embedding": "batch=32,vocab=1024"}
FIDELITY = SMOKE


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="KernelIndex runner campaign")
    parser.add_argument("--manifests", type=Path, required=True)
    parser.add_argument("--key", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--operations", default="rope,embedding")
    parser.add_argument("--smoke", action="store_true", help="one case per operation")
    parser.add_argument("--no-fidelity", action="store_true")
    parser.add_argument("--time-budget", type=float, default=4.0)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    console = Console(stderr=True, force_terminal=False, width=150)
    runner = keys.load_public_key(args.key.with_name(keys.PUBLIC_KEY_FILE))
    plan, outs = [], []
    for slug in args.operations.split(","):
        operation = registry.load_operation(slug)
        cases = workloads_from_file(args.manifests, operation)
        cases = sorted(cases, key=lambda w: sorted(w.spec.axes.items()))
        if args.smoke:
            cases = select_workloads(cases, SMOKE[slug])
        plan.append((operation, cases, None))
        outs.append(args.out / "bundles" / f"h200-{slug}-{time.strftime('%Y%m%d')}")
    session = run_session(plan, key_path=args.key, runner_name=runner.name, key_id=runner.key_id, out_dirs=outs,
                          time_budget_s=args.time_budget, console=console)
    summary: dict[str, Any] = {"probe": session.probe.__dict__, "environment": session.environment.model_dump(
        mode="json"), "operations": {}, "bundles": [b.digest for b in session.bundles]}
    campaign_s = time.perf_counter() - started
    for result in session.results:
        rows = outcome_rows(result)
        print_results(Console(width=150), result.operation.metadata.name, rows, result.skipped)
        summary["operations"][result.operation.metadata.name] = {"runs": rows, "skipped": result.skipped}
    print(f"copy bandwidth (runner probe): {session.copy_bandwidth / 1e9:,.0f} GB/s; "
          f"probe {json.dumps(session.probe.clocks)} {json.dumps(session.probe.software)}")
    print(f"campaign time: {campaign_s:.0f} s")
    if not args.no_fidelity:
        summary["fidelity"] = fidelity(session, args.manifests)
    summary["total_s"] = time.perf_counter() - started
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True, default=str))
    print(f"total time: {summary['total_s']:.0f} s")
    return 0


def fidelity(session: Any, manifests: Path) -> dict[str, Any]:
    from kernelindex.runner.cuda import CudaDevice

    device = CudaDevice()
    copy = copy_probe(device)
    repeats = []
    for slug, selector in FIDELITY.items():
        operation = registry.load_operation(slug)
        workload = select_workloads(workloads_from_file(manifests, operation), selector)[0]
        rep = repeat_case(slug, workload, device, TimingPolicy(), device.calls_per_sample)
        rep.pop("runs")
        repeats.append(rep)
    labels = {}
    for result in session.results:
        for case in result.cases:
            for o in case.impls:
                if o.run is not None:
                    labels[o.run.spec.source.external_id] = f"{result.operation.metadata.name} {o.run.metadata.title}"
    ratios = do_bench_ratios([r for res in session.results for r in res.runs()], labels)
    print_fidelity(copy, repeats, ratios)
    return {"copy": copy, "repeats": repeats, "do_bench": ratios}


if __name__ == "__main__":
    sys.exit(main())
