"""The first operation page of a fresh process on a full-install catalog, and the first search that resolves
one operation: both attach the attainable ceilings of the operation's GPUs (readmodel/attainable.py), which
used to load the attested runs of every verified operation (~4-5 s cold with every bundled source).

Each timing runs in a fresh process (no read-model cache): it opens the catalog and times one request —
an operation page through the app's TestClient (app start-up untimed) or one search. Prints the median of
``--repeat`` runs and the load average (the machine is shared). Target: the first page under 1.5 s.

    .venv/bin/python bench/page_cold.py --database-url sqlite:////tmp/full.sqlite [--repeat 3]

The operation summaries this code stores are stored first (untimed), as a fresh install's bootstrap does.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime

CASES = ["page:kernelbench-1-1-square-matrix-multiplication", "page:rope", "search:rope h100"]
NOW = datetime(2026, 11, 29, tzinfo=UTC)


def one(url: str, case: str) -> dict:
    """Answer ``case`` once in this (fresh) process: ``page:SLUG`` or ``search:QUERY``."""
    from kernelindex.catalog.db import open_catalog

    catalog = open_catalog(url)
    kind, _, what = case.partition(":")
    if kind == "search":
        from kernelindex.resolve.service import search

        started = time.perf_counter()
        status = search(catalog, what, now=NOW).status
        return {"seconds": time.perf_counter() - started, "status": status}
    from fastapi.testclient import TestClient

    from kernelindex.web.app import create_app

    with TestClient(create_app(catalog, clock=lambda: NOW)) as client:
        started = time.perf_counter()
        status = client.get(f"/operations/{what}").status_code
        return {"seconds": time.perf_counter() - started, "status": status}


def _child(url: str, case: str) -> dict:
    done = subprocess.run([sys.executable, __file__, "--database-url", url, "--one", case],
                          check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--case", action="append", help="page:SLUG or search:QUERY, instead of the defaults")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child process: time this case once
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(one(args.database_url, args.one)))
        return
    from kernelindex.catalog.db import open_catalog
    from kernelindex.readmodel.summaries import ensure_summaries

    started = time.perf_counter()
    if stored := ensure_summaries(open_catalog(args.database_url)):
        print(f"stored {stored} summaries this code lacked in {time.perf_counter() - started:.0f} s (untimed)")
    for case in args.case or CASES:
        answers = [_child(args.database_url, case) for _ in range(args.repeat)]
        times = [a["seconds"] for a in answers]
        print(f"{case:60} median {statistics.median(times) * 1000:6.0f} ms "
              f"({', '.join(f'{t * 1000:.0f}' for t in times)})  status {answers[-1]['status']}", flush=True)
    print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
