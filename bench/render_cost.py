"""What rendering a page costs once its data is kept: the answer cache's finished answers are dropped
before every request and the views' data kept, so each GET re-renders its template only (templates'
macros and partials are what this times). Prints the median and p90 over ``--rounds`` per page.

    PYTHONPATH=src .venv/bin/python bench/render_cost.py [--rounds 40]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime

PAGES = ["/", "/operations/rope", "/operations/embedding", "/records", "/challenges", "/gpus",
         "/gpus/h100", "/implementations/liger-kernel-rope", "/docs"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    from fastapi.testclient import TestClient

    from kernelindex.bootstrap import ensure_bundled_data
    from kernelindex.catalog.db import open_catalog
    from kernelindex.readmodel.cache import READ_CACHE
    from kernelindex.web.app import create_app

    with tempfile.TemporaryDirectory() as tmp:
        catalog = open_catalog(f"sqlite:///{tmp}/render.db")
        ensure_bundled_data(catalog)
        client = TestClient(create_app(catalog, clock=lambda: datetime(2030, 1, 15, 12, 0, tzinfo=UTC)))
        for path in PAGES:
            status = client.get(path).status_code  # loads and keeps the page's data
            times = []
            for _ in range(args.rounds):
                READ_CACHE.discard(lambda key: isinstance(key, tuple) and key[:1] == ("answer",))
                start = time.perf_counter()
                client.get(path)
                times.append((time.perf_counter() - start) * 1000)
            times.sort()
            print(f"{path:40} {status}  median {statistics.median(times):7.2f} ms  "
                  f"p90 {times[int(len(times) * 0.9)]:7.2f} ms")
        catalog.engine.dispose()


if __name__ == "__main__":
    main()
