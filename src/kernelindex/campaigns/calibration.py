"""Read a KernelBench campaign call's results and say what one GPU shared by K problem processes costs per
problem (its ledger, src/kernelindex/data/ledgers/): for each problem its wall time, the time it
held the GPU lock (its GPU phases: L, and by phase), the time it waited for it, the rest (its CPU-only phases: U), the
tripwire (GPU tensors made without the lock), and, where the same problem was also run alone
(``--solo``), the ratio of its device-time medians shared / alone. Then the per-problem rate of the GPU
(max(L, (L + U) / K) on average) and how many problems a call's budget holds.

    ki runner campaign calibrate RESULTS_DIR [--solo SOLO_RESULTS_DIR] [--workers K] [--budget 520]

RESULTS_DIR: a campaign's ``--out`` folder (or ``results.tgz`` unpacked): ``results/<impls>/<level>-<n>.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any


def _results(folder: Path) -> dict[str, dict[str, Any]]:
    return {f"{p.parent.name}/{p.stem}": json.loads(p.read_text()) for p in sorted(folder.glob("results/*/*.json"))}


def _medians(result: dict[str, Any]) -> dict[str, float]:
    return {k: v["timing"]["median_ns"] for k, v in result.get("implementations", {}).items() if "timing" in v}


def report(shared: dict[str, dict[str, Any]], solo: dict[str, dict[str, Any]], workers: int,
           budget: float) -> dict[str, Any]:
    rows = []
    for name, r in shared.items():
        lock = r.get("gpu_lock") or {}
        held, waited = lock.get("held_s", 0.0), lock.get("waited_s", 0.0)
        by_phase: dict[str, float] = {}
        for phase, _, acquired, released in lock.get("holds", []):
            phase = phase.split(" (")[0]
            by_phase[phase] = by_phase.get(phase, 0.0) + released - acquired
        row = {"problem": name, "status": r.get("status"), "wall_s": r.get("wall_s"), "L_s": round(held, 1),
               "L_by_phase_s": {k: round(v, 2) for k, v in by_phase.items()},
               "waited_s": round(waited, 1), "U_s": round((r.get("wall_s") or 0.0) - held - waited, 1),
               "unlocked": len(lock.get("unlocked", [])), "phases_s": r.get("phases_s", {}),
               "verdicts": {k: v["verdict"]["status"] for k, v in r.get("implementations", {}).items()}}
        if name in solo:
            alone, here = _medians(solo[name]), _medians(r)
            row["shared_over_alone"] = {k: round(here[k] / alone[k], 3) for k in here if alone.get(k)}
        rows.append(row)
    done = [r for r in rows if r["status"] == "done"]
    out: dict[str, Any] = {"problems": rows}
    if done:
        mean_l = statistics.fmean(r["L_s"] for r in done)
        mean_u = statistics.fmean(r["U_s"] for r in done)
        rate = max(mean_l, (mean_l + mean_u) / workers)
        ratios = [v for r in rows for v in r.get("shared_over_alone", {}).values()]
        out["summary"] = {
            "mean_L_s": round(mean_l, 1), "mean_U_s": round(mean_u, 1), "workers": workers,
            "seconds_per_problem": round(rate, 1), "problems_per_call": int(budget // rate) if rate else None,
            "best_workers": max(1, round((mean_l + mean_u) / mean_l)) if mean_l else None,
            "tripwire_results": sum(r["unlocked"] > 0 for r in rows),
            "mean_L_by_phase_s": {k: round(sum(r["L_by_phase_s"].get(k, 0.0) for r in done) / len(done), 2)
                                  for k in sorted({k for r in done for k in r["L_by_phase_s"]})},
            "shared_over_alone": {"n": len(ratios), "min": min(ratios), "max": max(ratios)} if ratios else None}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ki runner campaign calibrate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path)
    parser.add_argument("--solo", type=Path, help="the same problems run with one process per GPU")
    parser.add_argument("--workers", type=int, default=3, help="K the shared results ran with")
    parser.add_argument("--budget", type=float, default=520.0, help="a call's script budget, seconds")
    args = parser.parse_args(argv)
    found = report(_results(args.results), _results(args.solo) if args.solo else {}, args.workers, args.budget)
    for row in found["problems"]:
        print(json.dumps(row))
    print(json.dumps(found.get("summary"), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
