"""Import speed of the bundled Liger CSV (issue 2). Prints medians over several repetitions.

Goals on a 2-core machine: full publish into an empty SQLite catalog ≤ 5 s; re-publish ≤ 1 s.

    .venv/bin/python bench/import_liger.py [--repeat 5] [--postgres postgresql://postgres@127.0.0.1:5432/test]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable

from sqlalchemy import create_engine, text

from kernelindex.catalog.db import Catalog, normalize_url, open_catalog
from kernelindex.sources.base import ImportReport
from kernelindex.sources.liger import bundled_csv_path, import_liger, parse_and_normalize


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def parse_only() -> None:
    from kernelindex.domain.manifests import digest_of

    manifests = parse_and_normalize(bundled_csv_path().read_bytes(), ImportReport("liger", "bundled", ""))
    for manifest in manifests:
        digest_of(manifest)


def sqlite_catalog() -> Catalog:
    path = os.path.join(tempfile.mkdtemp(), "bench.sqlite")
    return open_catalog(f"sqlite:///{path}")


def postgres_catalog(url: str) -> Catalog:
    schema = f"ki_bench_{uuid.uuid4().hex[:10]}"
    with create_engine(normalize_url(url)).begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    return open_catalog(f"{normalize_url(url)}?options=-csearch_path%3D{schema}")


def measure(label: str, make: Callable[[], Catalog], repeat: int) -> None:
    first, again = [], []
    for _ in range(repeat):
        catalog = make()
        first.append(timed(lambda c=catalog: import_liger(c, dry_run=False, actor="bench")))
        again.append(timed(lambda c=catalog: import_liger(c, dry_run=False, actor="bench")))
        catalog.engine.dispose()
    for name, times in (("full publish", first), ("re-publish", again)):
        spread = f"(min {min(times):.3f}, max {max(times):.3f})"
        print(f"{label:<10} {name:<13} median {statistics.median(times):6.3f} s  {spread}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--postgres", default=os.environ.get("KERNELINDEX_TEST_DATABASE_URL"))
    args = parser.parse_args()
    parse_times = [timed(parse_only) for _ in range(args.repeat)]
    print(f"parse + normalize + digest only: median {statistics.median(parse_times):6.3f} s")
    measure("SQLite", sqlite_catalog, args.repeat)
    if args.postgres:
        measure("PostgreSQL", lambda: postgres_catalog(args.postgres), args.repeat)
    else:
        print("PostgreSQL: skipped (pass --postgres URL or set KERNELINDEX_TEST_DATABASE_URL)")


if __name__ == "__main__":
    main()
