"""Full import of everything the package ships (issue 10): Liger's three files and the publishable
part of the KernelIndex catalog export, as the first start does it. Prints the median over runs.

Goal on this 2-core machine: ≤ 30 s into an empty catalog, on SQLite and on PostgreSQL (issue 10);
≤ 60 s with every bundled source (~80,000 runs once aiter and KernelBench are in, issue 25).

    .venv/bin/python bench/import_all.py [--repeat 3] [--all] [--postgres postgresql://postgres@127.0.0.1:5432/test]

``--all`` imports ALL_PARTS (aiter and KernelBench too) instead of what a fresh install imports.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from sqlalchemy import create_engine, func, select, text

from kernelindex import bootstrap
from kernelindex.bootstrap import ALL_PARTS, BUNDLED_PARTS, ensure_bundled_data
from kernelindex.catalog.db import Catalog, normalize_url, open_catalog
from kernelindex.catalog.models import RunRow


def sqlite_catalog() -> Catalog:
    return open_catalog(f"sqlite:///{os.path.join(tempfile.mkdtemp(), 'bench.sqlite')}")


def scheduler_ns() -> tuple[int, int]:
    """This thread's time on a CPU and time runnable but waiting for one (Linux schedstat), in ns."""
    try:
        on_cpu, waiting, _ = Path("/proc/thread-self/schedstat").read_text().split()
    except (OSError, ValueError):
        return 0, 0
    return int(on_cpu), int(waiting)


def postgres_catalog(url: str) -> tuple[Catalog, str]:
    schema = f"ki_bench_{uuid.uuid4().hex[:10]}"
    with create_engine(normalize_url(url)).begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    return open_catalog(f"{normalize_url(url)}?options=-csearch_path%3D{schema}"), schema


SUMMARIES_CPU: list[tuple[float, float]] = []  # (CPU, wall) of each ensure_summaries call


def _timed_summaries(catalog: Catalog) -> int:
    """bootstrap's ensure_summaries (the home/records/GPU pages' per-operation summaries, stored after an
    import), timed so the import's own CPU and the summaries' are told apart."""
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        return ENSURE_SUMMARIES(catalog)  # type: ignore[misc]
    finally:
        SUMMARIES_CPU.append((time.process_time() - cpu, time.perf_counter() - wall))


ENSURE_SUMMARIES = getattr(bootstrap, "ensure_summaries", None)  # absent before the summaries (1dcee7a)
if ENSURE_SUMMARIES is not None:
    bootstrap.ensure_summaries = _timed_summaries


def one(make: callable, parts: tuple[str, ...]) -> tuple[float, int]:
    catalog = make()
    SUMMARIES_CPU.clear()
    start, cpu, (_, waited) = time.perf_counter(), time.process_time(), scheduler_ns()
    ensure_bundled_data(catalog, say=lambda line: None, parts=parts)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    waited = (scheduler_ns()[1] - waited) / 1e9
    # On a shared machine the wall time measures the neighbours too: the process's own CPU time
    # (SQLite writes in this process; PostgreSQL's server time is not in it), the time it was runnable
    # but waited for a CPU, and the load say how much. The rest is time blocked (disk, locks).
    print(f"  one import: {elapsed:.1f} s wall, {cpu:.1f} s CPU in this process, {waited:.1f} s waiting for a CPU, "
          f"{elapsed - cpu - waited:.1f} s blocked; load average {os.getloadavg()[0]:.1f}; peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")
    summaries_cpu, summaries_wall = (sum(each) for each in zip(*SUMMARIES_CPU, strict=True)) if SUMMARIES_CPU \
        else (0.0, 0.0)
    print(f"    of which storing the operations' summaries (bootstrap.ensure_summaries) {summaries_wall:.1f} s wall, "
          f"{summaries_cpu:.1f} s CPU; importing {elapsed - summaries_wall:.1f} s wall, "
          f"{cpu - summaries_cpu:.1f} s CPU")
    with catalog.engine.connect() as conn:
        runs = conn.execute(select(func.count()).select_from(RunRow)).scalar_one()
    catalog.engine.dispose()
    if catalog.engine.dialect.name == "sqlite":  # its own temporary folder, ~350 MB with --all
        shutil.rmtree(Path(str(catalog.engine.url.database)).parent)
    return elapsed, runs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--postgres")
    parser.add_argument("--all", action="store_true", help="every bundled source (ALL_PARTS), not BUNDLED_PARTS")
    args = parser.parse_args()
    parts = ALL_PARTS if args.all else BUNDLED_PARTS
    backends = {"sqlite": sqlite_catalog}
    if args.postgres:
        schemas: list[str] = []

        def make_pg() -> Catalog:
            catalog, schema = postgres_catalog(args.postgres)
            schemas.append(schema)
            return catalog

        backends["postgresql"] = make_pg
    for name, make in backends.items():
        results = [one(make, parts) for _ in range(args.repeat)]
        times = [t for t, _ in results]
        print(f"{name}: full import median {statistics.median(times):.1f} s "
              f"(min {min(times):.1f}, max {max(times):.1f}, n={len(times)}), {results[0][1]:,} runs")
    if args.postgres:
        with create_engine(normalize_url(args.postgres)).begin() as conn:
            for schema in schemas:
                conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))


if __name__ == "__main__":
    main()
