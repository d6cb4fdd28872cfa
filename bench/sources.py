"""Issue 10 figures on the full bundled catalog (Liger's three files + the KernelIndex export):
operation pages of the new sources against a static asset, search over 30 realistic queries, the
home page's fresh render, and one worker's RSS after warm-up. Short and bounded (2 shared cores). Prints each
page's p50 as a ratio to the static asset's, search's p50/p95, the render's median and the RSS, each beside its goal.

    .venv/bin/python bench/sources.py [--catalog sqlite:///path] [--requests 60]

Goals: operation page p50 ≤ 2× the static asset's p50; search p95 ≤ 50 ms; home page fresh render
≤ 100 ms; one worker ≤ 500 MB RSS after warm-up. (Full import: bench/import_all.py.)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from web import free_port, measure, start_server, static_path  # noqa: E402

PAGES = ["/operations/gqa-paged-decode-h32-kv4-d128-ps1", "/operations/gpumode-amd-fp8-mm",
         "/operations/gpumode-conv2d-v2", "/operations/fused-add-rms-norm", "/operations/rope"]
QUERIES = [
    "gqa paged decode b200", "fp8 gemm mi300x", "fused add rms norm cutile", "fused add rms norm b200",
    "rope seq=2048 hidden=8192 a100", "embedding a100", "rms norm", "layer norm fp32 b200", "softmax b200",
    "cross entropy b200", "cross entropy cute-dsl", "dyt b200", "poly norm", "qwen2vl mrope b200",
    "gemm b200", "gemm fp4 b200", "mla decode mi300x", "moe mi300x", "gpumode-amd-fp8-mm mi300x",
    "conv2d l4", "gqa ragged prefill b200", "mla paged decode b200", "rmsnorm b200", "nvfp4 gemm b200",
    "fused linear cross entropy a100", "swiglu a100", "geglu", "group norm b200", "kl div h100",
    "sort h100",
]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def prepare(url: str | None) -> str:
    from kernelindex.bootstrap import ensure_bundled_data
    from kernelindex.catalog.db import open_catalog

    url = url or f"sqlite:///{os.path.join(tempfile.mkdtemp(), 'bench.sqlite')}"
    catalog = open_catalog(url)
    started = time.perf_counter()
    ensure_bundled_data(catalog, say=lambda line: None)
    print(f"catalog ready in {time.perf_counter() - started:.1f} s: {url}")
    catalog.engine.dispose()
    return url


def search_figures(url: str) -> None:
    from kernelindex.catalog.db import open_catalog
    from kernelindex.resolve.service import search

    catalog = open_catalog(url)
    for q in QUERIES:  # warm: the server warms the read models at start, so does this
        search(catalog, q, now=datetime.now(UTC))
    samples = []
    for _ in range(3):
        for q in QUERIES:
            started = time.perf_counter()
            search(catalog, q, now=datetime.now(UTC)).to_json()
            samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    p95 = samples[round(0.95 * (len(samples) - 1))]
    print(f"search: {len(samples)} samples over {len(QUERIES)} queries: p50 {statistics.median(samples):.1f} ms, "
          f"p95 {p95:.1f} ms (goal ≤ 50 ms)")


def home_fresh_render(url: str) -> None:
    """The home page's model built afresh (the page cache bypassed: ``home_page`` itself), two ways:
    with every operation already loaded, as in a warmed worker on a new day; and with the read
    model's cache empty, as for the first visitor after a publication bumps the catalog version."""
    from kernelindex.catalog.db import open_catalog
    from kernelindex.readmodel.cache import READ_CACHE
    from kernelindex.readmodel.pages_home import home_page

    catalog = open_catalog(url)
    home_page(catalog, now=datetime.now(UTC))  # operations loaded once, as after a worker's warm-up
    warm = []
    for _ in range(9):
        started = time.perf_counter()
        home_page(catalog, now=datetime.now(UTC))
        warm.append((time.perf_counter() - started) * 1000)
    cold = []
    for _ in range(3):
        READ_CACHE.clear()
        started = time.perf_counter()
        home_page(catalog, now=datetime.now(UTC))
        cold.append((time.perf_counter() - started) * 1000)
    print(f"home page fresh render, read models warm: median {statistics.median(warm):.1f} ms (goal ≤ 100 ms); "
          f"after a publication (cache empty): median {statistics.median(cold):.0f} ms")


def walk_site(url: str, base: str) -> int:
    """Every operation page, the 30 queries and the site-wide pages once: what a worker holds after
    a crawler's visit. Returns the number of pages fetched."""
    import httpx
    from sqlalchemy import select

    from kernelindex.catalog.db import open_catalog
    from kernelindex.catalog.models import ObjectRow

    with open_catalog(url).engine.connect() as conn:
        slugs = sorted(conn.execute(select(ObjectRow.name).where(ObjectRow.kind == "OperationSpec")).scalars())
    with httpx.Client(base_url=base, timeout=120) as client:
        paths = [f"/operations/{s}" for s in slugs] + ["/records", "/challenges", "/gpus/h100", "/gpus/b200"]
        for path in paths:
            client.get(path).raise_for_status()
        for q in QUERIES:
            client.get("/search", params={"q": q}).raise_for_status()
    return len(paths) + len(QUERIES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--catalog")
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    url = prepare(args.catalog)
    search_figures(url)
    home_fresh_render(url)
    port = free_port()
    proc = start_server(url, port)
    base = f"http://127.0.0.1:{port}"
    try:
        time.sleep(5)  # the startup warm-up
        # Rounds alternate the static asset and the pages, so a change in the machine's load
        # between measurements moves both sides of each ratio alike; medians over the rounds.
        rounds: list[dict[str, float]] = []
        for _ in range(args.rounds):
            rounds.append({path: measure(base, path, args.requests, 2)["p50_ms"]
                           for path in [static_path(base), *PAGES]})
        static = statistics.median(r[static_path(base)] for r in rounds)
        print(f"static asset p50 {static:.2f} ms (median of {args.rounds} rounds)")
        for path in PAGES:
            p50 = statistics.median(r[path] for r in rounds)
            ratio = statistics.median(r[path] / r[static_path(base)] for r in rounds)
            print(f"{path:52} p50 {p50:7.2f} ms = {ratio:4.1f}× static (goal ≤ 2×)")
        print(f"worker RSS after warm-up and {len(PAGES) + 1} pages: {rss_mb(proc.pid):.0f} MB (goal ≤ 500 MB)")
        fetched = walk_site(url, base)
        print(f"worker RSS after {fetched} more pages (every operation, the queries, site pages): "
              f"{rss_mb(proc.pid):.0f} MB")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
