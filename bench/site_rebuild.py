"""What the site-wide answers cost two workers of one catalog per publication (issue 50), in CPU seconds.

    .venv/bin/python bench/site_rebuild.py --database sqlite:////tmp/copy.sqlite [--rounds 5]

Two apps over one catalog stand for two workers of ``ki serve`` (each under its own catalog URL, so each keeps
its own answers, versions and read model, as a process does), in one process so that one CPU clock counts both.
Both first answer every site-wide path of ``bench/load.py``'s mix (home, records, challenges, GPUs, the indexes,
search, the feed) once. Each round then uploads one new signed bundle to the first (``bench/new_bundles.py``
writes them: runs the catalog never saw), asks both workers for every path (each serves its previous answer
and computes the new one in the background) and asks again every ``--poll`` seconds until both serve every
path at the new version. It prints, per round, the CPU seconds of the process and the wall seconds from the
upload's answer until then, and the load average; then the medians. Compare trees with ``PYTHONPATH=<tree>/src``
on copies of one catalog (the catalog is opened without migrating it: migrate each copy with its own tree first,
``ki init --database URL``). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import httpx

from kernelindex.catalog.db import Catalog, open_catalog
from kernelindex.trust.uploads import pack_bundle
from kernelindex.web.answer_cache import STALE_FOR_S
from kernelindex.web.app import create_app

BENCH = Path(__file__).resolve().parent
SEARCHES = ["rope bf16 h100", "embedding", "rms norm a100", "fastest swiglu", "cross entropy bf16", "layer norm"]
PATHS = ["/", "/records", "/challenges", "/gpus", "/api/v1/records", "/api/v1/operations", "/feed.atom",
         *(f"/search?q={quote(q)}" for q in SEARCHES), *(f"/api/v1/search?q={quote(q)}" for q in SEARCHES)]


def second_url(url: str) -> str:
    """The same database under another URL (nothing a process keeps per catalog is shared between the two)."""
    separator = "&" if "?" in url else "?"
    return url + separator + ("timeout=30" if url.startswith("sqlite") else "application_name=second-worker")


async def ask_all(clients: list[httpx.AsyncClient]) -> bool:
    """Every path of every worker once; whether each answered at the current version (not marked updating)."""
    answers = await asyncio.gather(*(client.get(path) for client in clients for path in PATHS))
    return all("x-kernelindex-updating" not in answer.headers for answer in answers)


async def rounds(catalogs: list[Catalog], bundles: list[Path], token: str, poll: float) -> list[tuple[float, float]]:
    apps = [create_app(catalog, stale_for_s=STALE_FOR_S) for catalog in catalogs]
    clients = [httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench", timeout=600)
               for app in apps]
    await ask_all(clients)  # each worker's first answers: its own
    while not await ask_all(clients):
        await asyncio.sleep(poll)
    figures = []
    headers = {"authorization": f"Bearer {token}", "content-type": "application/gzip"}
    for bundle in bundles:
        answer = await clients[0].post("/api/v1/bundles", content=pack_bundle(bundle), headers=headers)
        if answer.status_code != 201:
            print(f"{bundle.name}: {answer.status_code} {answer.text[:200]}", flush=True)
            continue
        wall, cpu = time.perf_counter(), time.process_time()
        while not await ask_all(clients):
            await asyncio.sleep(poll)
        figures.append((time.process_time() - cpu, time.perf_counter() - wall))
        print(f"{bundle.name}: {figures[-1][0]:6.2f} s CPU, {figures[-1][1]:6.2f} s until both workers show it; "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
    for client in clients:
        await client.aclose()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", required=True, help="a copy of a catalog: the bench publishes into it")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--poll", type=float, default=0.5, help="seconds between asking every path again")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="ki-site-rebuild-"))
    subprocess.run([sys.executable, str(BENCH / "new_bundles.py"), "prepare", "--database", args.database,
                    "--count", str(args.rounds), "--out", str(folder)], check=True)
    bundles = sorted(p for p in folder.glob("bundle-*") if p.is_dir())
    catalogs = [open_catalog(args.database, migrate_schema=False),
                open_catalog(second_url(args.database), migrate_schema=False)]
    figures = asyncio.run(rounds(catalogs, bundles, (folder / "api-token").read_text().strip(), args.poll))
    if figures:
        print(f"median of {len(figures)} publications: {statistics.median(f[0] for f in figures):.2f} s CPU, "
              f"{statistics.median(f[1] for f in figures):.2f} s until both workers show every site-wide answer")


if __name__ == "__main__":
    main()
