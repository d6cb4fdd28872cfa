"""The site-wide pages at the size of every bundled source (issues 24/25): what each of home, records,
the GPU index, a GPU page, challenges and the API's implementations and workloads listings costs a
fresh worker (cold: its own process, nothing kept),
what the process then holds, and the page built again once warm. Prints figures; asserts nothing.

    .venv/bin/python bench/site_pages.py sqlite:////tmp/full.sqlite [--gpu mi300x] [--warm 5]

Each page runs in its own process (``--one PAGE``): the cold figure is that process's CPU
(``time.process_time``) and wall time for the first build, and its peak resident memory after it; the
warm figure is the median of ``--warm`` further builds in that process (what is kept per catalog
version stays; the page's own answer is not cached at this level). Compare trees with
``PYTHONPATH=<tree>/src``; the catalog is opened without migrating it, so migrate it first with the
newer tree (``open_catalog(url)``). The load average is printed with each page.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

PAGES = ("home", "records", "gpus", "gpu", "challenges", "implementations", "workloads")


def builder(page: str, catalog: Any, gpu: str, now: datetime) -> Callable[[], object]:
    from kernelindex.readmodel.pages_challenges import challenges_page
    from kernelindex.readmodel.pages_gpus import gpu_page, gpus_index
    from kernelindex.readmodel.pages_home import home_page
    from kernelindex.readmodel.pages_records import records_page
    from kernelindex.services import reads

    return {
        "home": lambda: home_page(catalog, now=now),
        "records": lambda: records_page(catalog, now=now),
        "gpus": lambda: gpus_index(catalog),
        "gpu": lambda: gpu_page(catalog, gpu, now=now),
        "challenges": lambda: challenges_page(catalog, now=now),
        # the API's two catalog-wide listings, as served (the service keeps its answer per catalog
        # version: their warm figure is that cache's)
        "implementations": lambda: reads.implementations(catalog),
        "workloads": lambda: reads.workloads(catalog, None),
    }[page]


def one(page: str, url: str, gpu: str, warm: int) -> None:
    from kernelindex.catalog.db import open_catalog

    catalog = open_catalog(url, migrate_schema=False)
    build = builder(page, catalog, gpu, datetime.now(UTC))
    wall, cpu = time.perf_counter(), time.process_time()
    build()
    cold_wall, cold_cpu = time.perf_counter() - wall, time.process_time() - cpu
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    times = []
    for _ in range(warm):
        start = time.process_time()
        build()
        times.append(time.process_time() - start)
    print(f"{page:<10} cold {cold_cpu:7.2f} s CPU ({cold_wall:7.2f} s wall), peak RSS {rss:7,.0f} MB; "
          f"warm median {statistics.median(times) * 1e3:8.1f} ms CPU; load {os.getloadavg()[0]:.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("catalog")
    parser.add_argument("--gpu", default="mi355x-mi350x-variant-not-recorded")  # the most cohorts
    parser.add_argument("--warm", type=int, default=5)
    parser.add_argument("--pages", nargs="*", default=list(PAGES), choices=PAGES)
    parser.add_argument("--one", choices=PAGES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(args.one, args.catalog, args.gpu, args.warm)
        return
    for page in args.pages:
        subprocess.run([sys.executable, __file__, args.catalog, "--gpu", args.gpu, "--warm", str(args.warm),
                        "--one", page], check=True)


if __name__ == "__main__":
    main()
