"""Figures of the runner protocol v3 campaign (issue 19) from campaign summaries (bench/campaign.py run's
summary-*.json): the self-check table (device time vs graph replay, every capturable run of at least
20 µs), the agreement of two summaries of the same cases (replication), and one case's rows.

    python bench/v3_tables.py selfcheck SUMMARY...
    python bench/v3_tables.py compare SUMMARY_A SUMMARY_B [--within 0.03]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any


def _rows(paths: list[Path]) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    out = {}
    for path in paths:
        for slug, op in json.loads(path.read_text())["operations"].items():
            for row in op["runs"]:
                out[(slug, row["case"], row["region"], row["implementation"])] = row
    return out


def selfcheck(paths: list[Path]) -> None:
    rows = [(k, r) for k, r in sorted(_rows(paths).items())
            if r.get("check_method") == "cuda_graph_replay" and r.get("median_ns") and r["median_ns"] >= 20_000]
    print("| operation | case | region | implementation | device µs | graph µs | graph/device | within 5% |")
    print("|---|---|---|---|--:|--:|--:|---|")
    for (slug, case, region, impl), r in rows:
        print(f"| {slug} | {case} | {region} | {impl} | {r['median_ns'] / 1e3:.2f} | {r['check_ns'] / 1e3:.2f} | "
              f"{r['check_ns'] / r['median_ns']:.3f} | {'yes' if r['check_agrees'] else '**no**'} |")
    agree = sum(1 for _, r in rows if r["check_agrees"])
    ratios = [r["check_ns"] / r["median_ns"] for _, r in rows]
    print(f"\n{agree} of {len(rows)} within 5%; graph/device median {statistics.median(ratios):.3f}, "
          f"range {min(ratios):.3f}–{max(ratios):.3f}")


def compare(a: Path, b: Path, within: float) -> None:
    left, right = _rows([a]), _rows([b])
    pairs = [(k, left[k]["median_ns"], right[k]["median_ns"]) for k in sorted(set(left) & set(right))
             if left[k].get("median_ns") and right[k].get("median_ns")
             and not left[k].get("under_sampled") and not right[k].get("under_sampled")]
    diffs = [(abs(x - y) / x, k, x, y) for k, x, y in pairs]
    inside = sum(1 for d, *_ in diffs if d <= within)
    print(f"{inside} of {len(diffs)} within {within:.0%}; median abs. difference "
          f"{statistics.median(d for d, *_ in diffs):.2%}")
    for d, k, x, y in sorted(diffs, reverse=True)[:5]:
        print(f"  {d:.2%}  {' | '.join(k)}: {x / 1e3:.2f} vs {y / 1e3:.2f} µs")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("selfcheck")
    s.add_argument("summaries", type=Path, nargs="+")
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    c.add_argument("--within", type=float, default=0.03)
    args = parser.parse_args(argv)
    if args.command == "selfcheck":
        selfcheck(args.summaries)
    else:
        compare(args.a, args.b, args.within)
    return 0


if __name__ == "__main__":
    sys.exit(main())
