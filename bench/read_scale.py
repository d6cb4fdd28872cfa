"""The read path at the size of every bundled source (issues 24/25: ~80,000 runs once aiter and
KernelBench are in): what a worker's first home page costs, what it then holds, and how fast the
pages and search answer once it is warm. Prints figures; asserts nothing.

    .venv/bin/python bench/read_scale.py sqlite:////tmp/full.sqlite [--operation rope] [--rounds 3]

Make the catalog once with ``ensure_bundled_data(catalog, parts=ALL_PARTS)`` (kernelindex.bootstrap).
Figures: the cold home page (wall and this process's CPU: on a shared machine the wall time measures
the neighbours too), the peak resident memory after it, the warm operation page's median over 20
builds with the answer caches emptied (the first cache level kept), and search's p50/p95 over
``bench/queries.txt`` (warm: after one untimed pass). Compare trees with ``PYTHONPATH=<tree>/src``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

QUERIES = Path(__file__).with_name("queries.txt")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("catalog")
    parser.add_argument("--operation", default="rope")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from kernelindex.catalog.db import open_catalog
    from kernelindex.readmodel.cache import READ_CACHE
    from kernelindex.readmodel.operations import operation_page
    from kernelindex.readmodel.pages_home import home_page
    from kernelindex.resolve.service import search

    catalog = open_catalog(args.catalog, migrate_schema=False)
    now = datetime.now(UTC)
    wall, cpu = time.perf_counter(), time.process_time()
    home_page(catalog, now=now)
    print(f"home page, cold: {time.perf_counter() - wall:.1f} s wall, {time.process_time() - cpu:.1f} s CPU, "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB, "
          f"load average {os.getloadavg()[0]:.1f}")
    pages = []
    for _ in range(20):
        READ_CACHE.discard(lambda key: isinstance(key, tuple) and key[:1] == ("view",))
        start = time.perf_counter()
        operation_page(catalog, args.operation, now=now)
        pages.append(time.perf_counter() - start)
    print(f"operation page {args.operation}, warm data, built: median {statistics.median(pages) * 1e3:.1f} ms")
    queries = [q.strip() for q in QUERIES.read_text().splitlines() if q.strip() and not q.startswith("#")]
    for query in queries:  # the untimed pass: the resolver derives its tables once per catalog version
        search(catalog, query, now=now)
    for round_number in range(args.rounds):
        times = []
        for query in queries:
            start = time.perf_counter()
            search(catalog, query, now=now)
            times.append(time.perf_counter() - start)
        times.sort()
        print(f"search round {round_number + 1}: p50 {statistics.median(times) * 1e3:.1f} ms, "
              f"p95 {times[int(0.95 * (len(times) - 1))] * 1e3:.1f} ms over {len(times)} queries, "
              f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
