"""The KernelBench H200 campaign (issue 24 item 5): every problem of the newest problem set, verified
and timed by the generic problem-module adapter (kernelindex.runner.problem_module), each problem in
its own process with a time limit and no network.

Prepare here (CPU), from the shipped data and the catalog's own mapping, so each case names the
workload digest the import gave the problem:

    .venv/bin/python bench/kernelbench_campaign.py prepare --out bench/kernelbench-cases.json

On the GPU machine (resumable: a problem with a result file is skipped):

    python bench/kernelbench_campaign.py run --cases bench/kernelbench-cases.json --out OUT \\
        --levels 1 --impl eager,torch-compile [--skip N] [--max N] [--time-limit 300] [--budget SECONDS]

Each problem writes ``OUT/results/<impl-set>/<level>-<number>.json``: the adapter's verdicts,
compile times (never in the figure), timing summaries and backend flags. Turning these into signed
bundles is protocol v3's bundle writer's job (see docs/sources-kernelbench.md).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any


def prepare(out: Path) -> dict[str, int]:
    from kernelindex.domain.manifests import digest_of
    from kernelindex.sources.kernelbench import map_kernelbench, read_kernelbench, shipped_path
    from kernelindex.sources.kernelbench.problem_file import read_problem

    data = read_kernelbench(shipped_path().read_bytes(), str(shipped_path()))
    newest = max(data.timings, key=lambda t: t.commit_date).problems
    mapped = map_kernelbench(data)
    workloads = {m.metadata.labels.get("kernelbench_file_digest"): digest_of(m)
                 for m in mapped.manifests if m.kind == "WorkloadCase"}
    cases = []
    for file, digest in sorted(data.sets[newest].files.items()):
        problem = read_problem(file, data.problems[digest])
        cases.append({"level": problem.level, "number": problem.number, "file": file, "digest": digest,
                      "workload": workloads.get(digest), "source": data.problems[digest]})
    cases.sort(key=lambda c: (c["level"], c["number"]))
    out.write_text(json.dumps({"problem_set": newest, "commit": data.sets[newest].commit, "cases": cases}) + "\n")
    return {"cases": len(cases), "without_workload": sum(c["workload"] is None for c in cases)}


def run(args: argparse.Namespace) -> None:
    from kernelindex.runner.problem_process import run_isolated

    document = json.loads(Path(args.cases).read_text())
    levels = {int(x) for x in args.levels.split(",")}
    impls = args.impl.split(",")
    folder = Path(args.out) / "results" / "+".join(impls)
    folder.mkdir(parents=True, exist_ok=True)
    cases = [c for c in document["cases"] if c["level"] in levels][args.skip:]
    cases = cases[: args.max] if args.max else cases
    start = time.monotonic()
    for case in cases:
        target = folder / f"{case['level']}-{case['number']}.json"
        if target.exists():
            continue
        if args.budget and time.monotonic() - start > args.budget - args.time_limit:
            print(f"stop before {case['file']}: the budget is spent", flush=True)
            break
        request: dict[str, Any] = {"source": case["source"], "digest": case["digest"], "device": args.device,
                                   "implementations": impls, "checks": 2,
                                   "policy": {"time_budget_ns": int(args.case_seconds * 1e9)}}
        began = time.monotonic()
        result = run_isolated(request, time_limit_s=args.time_limit)
        result.update({"file": case["file"], "workload": case["workload"],
                       "wall_s": round(time.monotonic() - began, 1)})
        target.write_text(json.dumps(result, indent=1) + "\n")
        print(f"{case['file']}: {result.get('status')} {result['wall_s']} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", type=Path, default=Path("bench/kernelbench-cases.json"))
    r = sub.add_parser("run")
    r.add_argument("--cases", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--levels", default="1")
    r.add_argument("--impl", default="eager,torch-compile")
    r.add_argument("--device", default="cuda")
    r.add_argument("--skip", type=int, default=0)
    r.add_argument("--max", type=int, default=0)
    r.add_argument("--time-limit", type=float, default=300.0, help="seconds per problem (its process is killed)")
    r.add_argument("--case-seconds", type=float, default=2.0, help="timing budget per problem, all implementations")
    r.add_argument("--budget", type=float, default=0.0, help="stop starting problems when this many seconds are spent")
    args = parser.parse_args()
    if args.command == "prepare":
        print(json.dumps(prepare(args.out)))
    else:
        run(args)


if __name__ == "__main__":
    main()
