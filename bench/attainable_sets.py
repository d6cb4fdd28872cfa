"""What a worker spends on the attainable figures after a verified publication: every GPU set the operations'
pages ask for (``readmodel/attainable.py``), computed again from an emptied figure cache, three rounds.

    .venv/bin/python bench/attainable_sets.py --database sqlite:////tmp/full.sqlite [--rounds 3]

Prints how many GPU sets the catalog's operations have and each round's seconds. Run it against another tree
with ``PYTHONPATH=that/src`` (``--no-migrate`` when the catalog's schema is newer than that tree's). It asserts
nothing (docs/performance.md, issue 50).
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime

from kernelindex.catalog.db import open_catalog
from kernelindex.readmodel.cache import READ_CACHE
from kernelindex.readmodel.loading import attainable_now
from kernelindex.readmodel.summaries import operation_summaries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-migrate", action="store_true", help="open the catalog as it is")
    args = parser.parse_args()
    catalog = open_catalog(args.database, migrate_schema=not args.no_migrate)
    summaries = operation_summaries(catalog, now=datetime.now(UTC))
    sets = sorted({frozenset(g.gpu for g in s.gpus) for s in summaries} - {frozenset()}, key=sorted)
    rounds = []
    for _ in range(args.rounds):
        READ_CACHE.discard(lambda key: isinstance(key, tuple) and bool(key) and str(key[0]).startswith("attainable"))
        started = time.perf_counter()
        for gpus in sets:
            attainable_now(catalog, gpus)
        rounds.append(time.perf_counter() - started)
    print(f"{len(sets)} GPU sets; every set's figures after a new version: "
          f"{', '.join(f'{s:.2f}' for s in rounds)} s")


if __name__ == "__main__":
    main()
