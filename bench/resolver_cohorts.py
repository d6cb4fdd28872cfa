"""The resolver's ranked cohorts of an operation whose runs are already loaded (``resolve.source.cohorts_from``):
the per-operation work a search repeats after a publication changes that operation. Prints the median of
``--repeat`` timings per operation and the load average (the machine is shared).

    .venv/bin/python bench/resolver_cohorts.py --database-url sqlite:////tmp/catalog.sqlite [--repeat 21] [OP …]

To compare two checkouts on one catalog, run it from each with ``PYTHONPATH=OTHER/src`` and alternate the runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from kernelindex.catalog.db import open_catalog
from kernelindex.readmodel.operations import load_operation_runs
from kernelindex.resolve.source import cohorts_from

OPERATIONS = ["rope", "layer-norm", "kernelbench-1-19-relu", "cross-entropy"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("operations", nargs="*", default=OPERATIONS)
    args = parser.parse_args()
    catalog = open_catalog(args.database_url)
    for slug in args.operations:
        data = load_operation_runs(catalog, slug)
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            cohorts_from(data)
            times.append(time.perf_counter() - start)
        print(f"{slug}: {len(data.runs)} runs, median {statistics.median(times) * 1000:.1f} ms")
    print("load average", ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
