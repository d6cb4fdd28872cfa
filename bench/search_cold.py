"""Cold search on a full install: the first query after a worker opens the catalog, with every bundled
source imported (~700 GEMM-family operations: "gemm h100" names them all and the chooser weighs each).

Each timing runs in a fresh process (no read-model cache, no loaded operation): it opens the catalog,
answers one query and reports the seconds that query took. Prints the median of ``--repeat`` such runs
per query, the answer's status and choice count, and the load average (the machine is shared).

    .venv/bin/python bench/search_cold.py [--database-url sqlite:////tmp/full.sqlite] [--repeat 3]

Without ``--database-url`` a catalog with every bundled part (ALL_PARTS) is built in a temporary folder
first (a few minutes). The summaries the site-wide pages and the chooser read are stored by the import;
against a catalog built by older code they are stored again (untimed) before the first query, as a fresh
install's bootstrap would. Goal: every query well under 1 s cold.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime

QUERIES = ["gemm h100", "kernelbench h100", "level 3", "relu", "rope h100"]
NOW = datetime(2026, 11, 29, tzinfo=UTC)


def one(url: str, query: str, registry_loaded: bool) -> dict:
    """Open the catalog and answer ``query`` once, in this (fresh) process; ``registry_loaded``: after
    parsing the registry's files first, as a server's start-up does (a ``ki`` command does not)."""
    from kernelindex.catalog.db import open_catalog
    from kernelindex.resolve.service import search
    from kernelindex.resolve.vocabulary import registry_vocabulary

    if registry_loaded:
        registry_vocabulary()
    catalog = open_catalog(url)
    started = time.perf_counter()
    r = search(catalog, query, now=NOW)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "status": r.status, "choices": len(r.choices),
            "picked": r.operation["slug"] if r.operation else None}


def prepared(url: str | None) -> str:
    """A catalog with every bundled part and its stored summaries: ``url``, or one built here."""
    from kernelindex.bootstrap import ALL_PARTS, ensure_bundled_data
    from kernelindex.catalog.db import open_catalog
    from kernelindex.readmodel.summaries import ensure_summaries

    if url is None:
        url = f"sqlite:///{os.path.join(tempfile.mkdtemp(), 'full.sqlite')}"
        started = time.perf_counter()
        ensure_bundled_data(open_catalog(url), parts=ALL_PARTS)
        print(f"built {url} in {time.perf_counter() - started:.0f} s")
    started = time.perf_counter()
    if stored := ensure_summaries(open_catalog(url)):
        print(f"stored {stored} summaries this code lacked in {time.perf_counter() - started:.0f} s (untimed)")
    return url


def _child(url: str, query: str, extra: list[str]) -> dict:
    done = subprocess.run([sys.executable, __file__, "--database-url", url, "--one", query, *extra],
                          check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database-url")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--query", action="append", help="instead of the default queries")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child process: time this query once
    parser.add_argument("--registry-loaded", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(one(args.database_url, args.one, args.registry_loaded)))
        return
    url = prepared(args.database_url)
    print("cold: a fresh process (as `ki query`); catalog-cold: registry parsed first (as a server's worker)")
    for query in args.query or QUERIES:
        print(f"{query!r:20}", end="", flush=True)
        for label, extra in (("cold", []), ("catalog-cold", ["--registry-loaded"])):
            answers = [_child(url, query, extra) for _ in range(args.repeat)]
            times = [a["seconds"] for a in answers]
            print(f"  {label} median {statistics.median(times) * 1000:6.0f} ms "
                  f"({', '.join(f'{t * 1000:.0f}' for t in times)})", end="", flush=True)
        last = answers[-1]
        picked = f", picked {last['picked']}" if last["picked"] else ""
        print(f"  {last['status']}, {last['choices']} choices{picked}")
    print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
