"""Full-catalog read-model load: CPU and wall time of ``_load_all`` (the one-pass load of every
operation) with the read cache cleared before each pass, and the memory the loaded catalog holds.

    .venv/bin/python bench/readmodel_load.py sqlite:///kept.db [--passes 5]

The catalog must already hold data (e.g. one kept by ``bench/api_snapshot.py --catalog`` or
bootstrapped with ``kernelindex.bootstrap.ensure_bundled_data``). One warm-up pass, then
``--passes`` timed passes (medians printed), then one pass under tracemalloc: ``held`` is what the
loaded catalog keeps after a collection, ``peak`` the most the load allocated at once. To compare two
trees on one catalog, run it with ``PYTHONPATH=<other tree>/src``; alternate the runs, the machine is
noisy. Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import time
import tracemalloc


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("catalog")
    parser.add_argument("--passes", type=int, default=5)
    args = parser.parse_args()
    from kernelindex.catalog.db import open_catalog
    from kernelindex.readmodel import loading
    from kernelindex.readmodel.cache import READ_CACHE

    catalog = open_catalog(args.catalog)
    version = catalog.version()
    loading._load_all(catalog, version)  # imports, registry, the database's page cache
    cpu, wall = [], []
    for _ in range(args.passes):
        READ_CACHE.clear()
        gc.collect()
        started, started_wall = time.process_time(), time.perf_counter()
        data = loading._load_all(catalog, version)
        cpu.append(time.process_time() - started)
        wall.append(time.perf_counter() - started_wall)
        del data
    READ_CACHE.clear()
    gc.collect()
    tracemalloc.start()
    data = loading._load_all(catalog, version)
    gc.collect()
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    runs = sum(len(d.runs) + len(d.memory_runs) + len(d.score_runs) for d in data.values())
    print(f"{len(data)} operations, {runs:,} runs: CPU median {statistics.median(cpu) * 1000:.0f} ms "
          f"({', '.join(f'{c * 1000:.0f}' for c in cpu)}), wall median {statistics.median(wall) * 1000:.0f} ms; "
          f"held {held / 2**20:.1f} MiB, peak {peak / 2**20:.1f} MiB, "
          f"max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
