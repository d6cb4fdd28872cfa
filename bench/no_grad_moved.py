"""How far the KernelBench re-measurement under torch.no_grad() moved each figure (the ledgers of campaigns
v14-v17): for every shipped supersession with the no_grad reason whose old run passed, new median ÷ old median, by
level and implementation — the median, the extremes and how many are outside 5%.

    .venv/bin/python bench/no_grad_moved.py [--level 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

from kernelindex.domain.manifests import digest_of
from kernelindex.trust.bundles import verify_directory

DATA = Path(__file__).resolve().parents[1] / "src" / "kernelindex" / "data"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", type=int, help="one level only")
    args = parser.parse_args()
    runs = {digest_of(r): r for folder in sorted((DATA / "verified").glob("h200-kernelbench-level*"))
            for r in verify_directory(folder).runs()}
    ratios: dict[tuple[str, str], list[tuple[float, str]]] = defaultdict(list)
    for line in (DATA / "supersessions.jsonl").read_text().splitlines():
        entry = json.loads(line)
        new, old = runs.get(entry["new"]), runs.get(entry["old"])
        if "torch.no_grad()" not in entry["reason"] or new is None or old is None or old.spec.status != "passed":
            continue
        problem = new.metadata.title.split("kernelbench ")[1].split(" ")[0]  # "3/44"
        if args.level and not problem.startswith(f"{args.level}/"):
            continue
        implementation = new.metadata.title.split(" · ")[0]
        ratio = new.spec.timing.median_ns / old.spec.timing.median_ns
        ratios[(problem.split("/")[0], implementation)].append((ratio, problem))
    for (level, implementation), found in sorted(ratios.items()):
        values = [r for r, _ in found]
        low, high = min(found), max(found)
        print(f"level {level} · {implementation}: {len(found)} runs, median {statistics.median(values):.4f}, "
              f"lowest {low[0]:.3f} ({low[1]}), highest {high[0]:.3f} ({high[1]}), "
              f"{sum(abs(r - 1) > 0.05 for r in values)} outside 5%")


if __name__ == "__main__":
    main()
