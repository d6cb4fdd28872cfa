"""Print the FlashInfer runs of a campaign folder (bench/flashinfer_gpu.sh's summary-fi-*.json) as one table:
definition, case, implementation, status, median (stream time, µs), plan's host cost (µs), floor (µs), and the
failure's detail where a run did not pass; then the count of definitions with 4 or more passed cases per
implementation (issue 45's bar: 12 definitions at 4 workloads).

    python bench/flashinfer_summary.py WORK_DIR
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path


def _us(ns: object) -> str:
    return "-" if ns is None else f"{float(ns) / 1e3:,.1f}"  # type: ignore[arg-type]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    passed: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    print(f"{'definition':42} {'case':34} {'implementation':26} {'status':20} {'median µs':>10} {'plan µs':>8} "
          f"{'floor µs':>9}")
    for path in sorted(Path(argv[0]).glob("summary-fi-*.json")):
        for slug, entry in sorted(json.loads(path.read_text()).get("operations", {}).items()):
            for row in entry.get("runs", []):
                print(f"{slug:42} {row['case'][:34]:34} {row['implementation']:26} {row['status']:20} "
                      f"{_us(row.get('median_ns')):>10} {_us(row.get('plan_ns')):>8} {_us(row.get('floor_ns')):>9}")
                if row["status"] == "passed":
                    passed[row["implementation"]][slug] += 1
                elif row.get("detail"):
                    print(f"    {row['detail'][:240]}")
    for impl, by_slug in sorted(passed.items()):
        print(f"{impl}: {sum(1 for n in by_slug.values() if n >= 4)} definitions with ≥ 4 passed cases "
              f"({sum(by_slug.values())} passed runs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
