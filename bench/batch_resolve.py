"""Batch resolve latency: ``POST /api/v1/resolve/batch`` with the 50 queries of ``bench/queries.txt``.

The app runs in process (FastAPI's TestClient: routing, validation, the resolver, JSON encoding —
no network) over a catalog holding the real bundled data (Liger CSV + verified bundles). The first
call after start is reported apart ("cold": it loads every operation the queries touch). Then two
steady states: "repeat" sends the same batch again (each answer comes from the per-catalog-version
answer cache GET /search shares), "fresh" drops the cached answers (keys ``("api", …)``) before every
batch, so all 50 answers are computed by the resolver while its loaded operations stay warm — what a
batch of never-seen queries costs on a serving worker. "reload" empties the whole read-model cache
before every batch (every operation loaded again: a worker's first batch after a publication).
Goal (issue 13): p95 of one 50-query batch ≤ 100 ms. Prints the cold batch, then p50 and p95 of each steady
state, the answer's size and the load average.

    .venv/bin/python bench/batch_resolve.py [--rounds 30] [--database sqlite:///…]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from kernelindex.bootstrap import ensure_bundled_data
from kernelindex.catalog.db import open_catalog
from kernelindex.readmodel.cache import READ_CACHE
from kernelindex.web.app import create_app

QUERIES = Path(__file__).with_name("queries.txt")


def load_queries() -> list[str]:
    lines = QUERIES.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--database", help="catalog URL (default: a fresh SQLite file with the bundled data)")
    args = parser.parse_args()
    url = args.database or f"sqlite:///{tempfile.mkdtemp(prefix='ki-bench-')}/catalog.sqlite"
    catalog = open_catalog(url)
    ensure_bundled_data(catalog)
    queries = load_queries()
    repeat: list[float] = []
    fresh: list[float] = []
    reload: list[float] = []
    with TestClient(create_app(catalog)) as client:
        cold = _post(client, queries)[0]
        for _ in range(args.rounds):
            repeat.append(_post(client, queries)[0])
        for _ in range(args.rounds):
            READ_CACHE.clear()
            reload.append(_post(client, queries)[0])
        for _ in range(args.rounds):
            READ_CACHE.discard(lambda key: isinstance(key, tuple) and key[:1] == ("api",))
            elapsed, response = _post(client, queries)
            fresh.append(elapsed)
        body = response.json()
    statuses: dict[str, int] = {}
    for answer in body["answers"]:
        status = answer["result"]["status"] if answer["result"] else f"problem {answer['status']}"
        statuses[status] = statuses.get(status, 0) + 1
    print(f"queries per batch: {len(queries)}  rounds: {args.rounds}  answers: {statuses}")
    print(f"response size: {len(response.content) / 1024:.0f} KiB")
    print(f"cold (first batch after start): {cold:.1f} ms")
    print(f"load average: {Path('/proc/loadavg').read_text().split()[:3]}")
    for name, values in (("repeat", repeat), ("fresh", fresh), ("reload", reload)):
        print(f"{name}: p50 {statistics.median(values):.1f} ms  p95 {percentile(values, 0.95):.1f} ms  "
              f"(goal p95 <= 100 ms; per query p50 {statistics.median(values) / len(queries):.2f} ms)")


def _post(client: TestClient, queries: list[str]) -> tuple[float, Any]:
    started = time.perf_counter()
    response = client.post("/api/v1/resolve/batch", json={"queries": queries})
    elapsed = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    return elapsed, response


if __name__ == "__main__":
    main()
