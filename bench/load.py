"""Bounded load generator on loopback: mixed page / API / search traffic from N concurrent
clients for a fixed duration against ``ki serve``, printing requests/s and p50/p95/p99 latency.

    .venv/bin/python bench/load.py --database sqlite:////tmp/c.sqlite [--workers 2] \\
        [--clients 16 64] [--duration 12] [--during-publish] [--driver wrk|httpx]

It starts ``ki serve --workers N`` on a free 127.0.0.1 port (the catalog is bootstrapped first),
runs each client count for ``--duration`` seconds, stops the server and exits. With
``--during-publish`` a NEW signed bundle is uploaded to the server (``POST /api/v1/bundles``, as
``ki publish --server`` and runners do) every ``--publish-every`` seconds (default 10) while the
clients load the site: each bundle holds runs the catalog has never seen (``bench/new_bundles.py``
re-signs a shipped bundle's runs, one operation per bundle in turn, with a bench runner key it
trusts in the catalog first), so every upload writes rows and bumps the catalog version. (A
re-publication of what the catalog already holds writes nothing and invalidates nothing: the loop
this replaced measured no publication at all.)
``--url http://127.0.0.1:PORT`` loads a server that is already running instead (loopback only).

The clients are ``wrk`` (a C load generator: one thread, N keep-alive connections, each path drawn at
random from the mix by a Lua script) when it is installed, else Python (httpx on asyncio). On a
2-core machine the load generator shares the CPU with the server: the Python one costs about as much
CPU per request as the server does, so its figures understate the server; ``--driver`` picks one.

Each row ends with the 1-minute load average (the machine is shared: quote medians of repeated rows,
``--repeat N``). While publishing, the publisher's line follows: how many uploads were published, each
upload's seconds, and each time from a 201 to its runs counted on their operation's page (its JSON twin,
read every 50 ms), with their median and largest.

Goals (issue 50): while a new bundle is published every 10 s, p99 ≤ 1 s at 64 connections on PostgreSQL
and on SQLite with 0 errors, quiet p99 ≤ 50 ms, and a published run on its operation's page within 10 s.
Figures go to docs/performance.md; this prints them, it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit

import httpx

SEARCHES = ["rope bf16 h100", "embedding", "rms norm a100", "fastest swiglu", "cross entropy bf16", "layer norm"]
KI = [sys.executable, "-m", "kernelindex.cli"]
WARM_TIMEOUT_S = 900  # a cold worker computes the records ledger of every cohort once (minutes on a busy machine)
BENCH = Path(__file__).resolve().parent


@dataclass
class Sample:
    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0
    statuses: dict[int, int] = field(default_factory=dict)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def targets(base: str) -> list[str]:
    """The traffic mix: pages, their JSON twins, search, run dossiers (ids read from the API)."""
    with httpx.Client(base_url=base, timeout=WARM_TIMEOUT_S) as client:
        slugs = [item["slug"] for item in client.get("/api/v1/operations").json()["items"]][:12]
        runs = [row["run_id"] for row in client.get("/api/v1/operations/rope").json()["ranked"][:6]]
    pages = ["/", "/records", "/challenges", "/gpus"] + [f"/operations/{s}" for s in slugs]
    api = [f"/api/v1/operations/{s}" for s in slugs[:6]] + ["/api/v1/records", "/api/v1/operations"]
    search = [f"/search?q={quote(q)}" for q in SEARCHES] + [f"/api/v1/search?q={quote(q)}" for q in SEARCHES]
    dossiers = [f"/runs/{r}" for r in runs] + [f"/api/v1/runs/{r}" for r in runs]
    return pages * 3 + api * 2 + search * 2 + dossiers  # roughly: half pages, a quarter API, a quarter search


async def client_loop(client: httpx.AsyncClient, paths: list[str], deadline: float, seed: int, out: Sample) -> None:
    rng = random.Random(seed)
    while (now := time.perf_counter()) < deadline:
        path = rng.choice(paths)
        try:
            response = await client.get(path)
            out.statuses[response.status_code] = out.statuses.get(response.status_code, 0) + 1
            if response.status_code >= 400:
                out.errors += 1
        except httpx.HTTPError:
            out.errors += 1
            continue
        out.latencies_ms.append((time.perf_counter() - now) * 1000)


async def run_load(base: str, paths: list[str], clients: int, duration: float) -> tuple[Sample, float]:
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    sample = Sample()
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=30) as client:
        started = time.perf_counter()
        deadline = started + duration
        await asyncio.gather(*(client_loop(client, paths, deadline, seed, sample) for seed in range(clients)))
        elapsed = time.perf_counter() - started
    return sample, elapsed


WRK_SCRIPT = """
local paths = {%s}
local seed_done = false
request = function()
  if not seed_done then math.randomseed(os.time()); seed_done = true end
  return wrk.format("GET", paths[math.random(#paths)])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("WRK %%d %%d %%d %%d %%d %%d %%d %%d\\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(95), latency:percentile(99), latency.max,
    e.connect + e.read + e.write + e.timeout, e.status))
end
"""


def wrk_summary(base: str, paths: list[str], clients: int, duration: float) -> tuple[int, ...]:
    """One wrk run over the mix: requests, duration µs, p50, p95, p99, max µs, transport errors, bad statuses."""
    lua = WRK_SCRIPT % ", ".join('"' + p.replace('"', '%22') + '"' for p in paths)
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
        script.write(lua)
        script.flush()
        out = subprocess.run(["wrk", "-t1", f"-c{clients}", f"-d{duration:.0f}s", "--timeout", "30s", "-s",
                              script.name, base], capture_output=True, text=True, check=True).stdout
    line = next(row for row in out.splitlines() if row.startswith("WRK "))
    return tuple(int(v) for v in line.split()[1:])


def run_wrk(base: str, paths: list[str], clients: int, duration: float) -> str:
    """One wrk run over the mix; its summary as a row of the table (latencies from wrk's histogram)."""
    requests, micros, p50, p95, p99, top, errors, bad_status = wrk_summary(base, paths, clients, duration)
    return (f"{requests:>7,} {requests / (micros / 1e6):>8.0f} {p50 / 1000:>8.1f} {p95 / 1000:>8.1f} "
            f"{p99 / 1000:>8.1f} {top / 1000:>8.1f} {errors + bad_status:>6}")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def report(label: str, clients: int, sample: Sample, elapsed: float) -> str:
    lat = sample.latencies_ms
    return (f"{len(lat):>7,} {len(lat) / elapsed:>8.0f} "
            f"{statistics.median(lat) if lat else float('nan'):>8.1f} {percentile(lat, 0.95):>8.1f} "
            f"{percentile(lat, 0.99):>8.1f} {max(lat, default=float('nan')):>8.1f} {sample.errors:>6}")


HEADER = f"{'configuration':<44} {'cli':>4} {'requests':>7} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} " \
         f"{'p99 ms':>8} {'max ms':>8} {'errors':>6}"


def start_server(database: str, workers: int, log: Path | None = None) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "KERNELINDEX_DATABASE_URL": database}
    out = log.open("w") if log else subprocess.DEVNULL
    proc = subprocess.Popen([*KI, "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers),
                             "--log-level", "warning"], env=env, stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + WARM_TIMEOUT_S  # after an upgrade the summaries are computed again first
    while True:
        try:
            if httpx.get(f"{base}/operations/rope", timeout=30).status_code == 200:
                return proc, base
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc)  # a server left running would hold the catalog and the CPU
            raise SystemExit("ki serve did not come up")
        time.sleep(0.5)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def prepare_bundles(database: str, count: int) -> Path:
    """Trust a bench runner key, make an upload API key and write ``count`` new bundles (untimed)."""
    folder = Path(tempfile.mkdtemp(prefix="ki-load-bundles-"))
    subprocess.run([sys.executable, str(BENCH / "new_bundles.py"), "prepare", "--database", database, "--count",
                    str(count), "--out", str(folder)], check=True)
    return folder


def publisher(base: str, folder: Path, every: float, stop_at: float) -> subprocess.Popen:
    """Upload one new bundle every ``every`` seconds until ``stop_at``."""
    return subprocess.Popen([sys.executable, str(BENCH / "new_bundles.py"), "upload", "--server", base, "--every",
                             str(every), "--until", str(stop_at), str(folder)],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)


def run_count(database: str) -> int:
    from sqlalchemy import func, select

    from kernelindex.catalog.db import open_catalog
    from kernelindex.catalog.models import RunRow

    catalog = open_catalog(database, migrate_schema=False)
    with catalog.engine.connect() as conn:
        count = conn.execute(select(func.count()).select_from(RunRow)).scalar_one()
    catalog.engine.dispose()
    return count


def loopback_only(url: str) -> str:
    host = urlsplit(url).hostname
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit(f"--url must be a loopback address, not {host}")
    return url.rstrip("/")


def measure(args: argparse.Namespace, base: str) -> None:
    bundles = None
    if any(args.publish_every):  # trusting the bench key changes every operation: before the warm-up
        publishing = sum(int(args.duration / every) + 2 for every in args.publish_every if every)
        bundles = prepare_bundles(args.database, len(args.clients) * publishing * args.repeat)
    paths = targets(base)
    for path in sorted(set(paths)):  # compute every answer once (on whichever worker takes it)
        httpx.get(base + path, timeout=WARM_TIMEOUT_S)
    # Then an untimed round of the mix, so every worker has its own copy: the figures are steady state.
    if args.driver == "wrk":
        run_wrk(base, paths, 16, args.warmup)
    else:
        asyncio.run(run_load(base, paths, 16, args.warmup))
    print(HEADER)
    # Every row of one publishing rate before the next: a quiet row run after a publishing one absorbed the
    # computations of that row's last upload (its p99 read 100 ms where the quiet rows before read 40).
    for every in args.publish_every:
        for _ in range(args.repeat):
            for clients in args.clients:
                load_once(args, base, paths, clients, every, bundles)
    if bundles:
        shutil.rmtree(bundles, ignore_errors=True)


def load_once(args: argparse.Namespace, base: str, paths: list[str], clients: int, every: float,
              bundles: Path | None) -> None:
    """One row: ``clients`` for ``--duration`` seconds, uploading a new bundle every ``every`` s (0: none)."""
    pub = publisher(base, bundles, every, time.time() + args.duration) if every and bundles else None
    label = f"{args.label}{f' + new bundle every {every:g} s' if pub else ''}"
    if args.driver == "wrk":
        row = run_wrk(base, paths, clients, args.duration)
    else:
        sample, elapsed = asyncio.run(run_load(base, paths, clients, args.duration))
        row = report(label, clients, sample, elapsed)
    print(f"{label:<44} {clients:>4} {row}  load {os.getloadavg()[0]:.1f}", flush=True)
    if pub:
        print(f"{'':<44} {visibility(pub.communicate(timeout=600)[0].strip())}", flush=True)
    if args.driver == "httpx" and set(sample.statuses) - {200}:
        print(f"{'':<44} statuses: {dict(sorted(sample.statuses.items()))}")


def visibility(published: str) -> str:
    """The publisher's line, with the median and largest time from a 201 to its runs on the operation's page."""
    try:
        shown = json.loads(published.rsplit("visible_s", 1)[1])
    except (IndexError, ValueError):
        return published
    seen = [s for s in shown if s is not None]
    summary = (f"visible after 201: median {statistics.median(seen):.2f} s, max {max(seen):.2f} s"
               if seen else "visible after 201: none shown")
    return f"{published}\n{'':<44} {summary}, not shown within 30 s: {len(shown) - len(seen)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", help="catalog URL for the server (bootstrapped by ki serve)")
    parser.add_argument("--url", help="load an already running server instead (loopback only)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--clients", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--duration", type=float, default=12.0, help="seconds per client count (max 60)")
    parser.add_argument("--during-publish", action="store_true",
                        help="upload a new bundle every 10 s meanwhile (needs --database); same as --publish-every 10")
    parser.add_argument("--publish-every", type=float, nargs="+", default=None,
                        help="seconds between uploads, one set of rows per value (0: no uploads), e.g. 0 10 2")
    parser.add_argument("--warmup", type=float, default=5.0,
                        help="seconds of untimed load first, so every worker has computed its answers (a busy "
                             "machine needs minutes: each worker computes the records ledger once)")
    parser.add_argument("--repeat", type=int, default=1, help="measure every row this many times (medians: by hand)")
    parser.add_argument("--server-log", type=Path, help="write the server's output here (default: discarded)")
    parser.add_argument("--label", default="", help="the configuration's name in the output")
    parser.add_argument("--driver", choices=["wrk", "httpx"], default="wrk" if shutil.which("wrk") else "httpx",
                        help="the load generator (default: wrk when installed)")
    args = parser.parse_args()
    args.duration = min(args.duration, 60.0)
    args.publish_every = args.publish_every or ([10.0] if args.during_publish else [0.0])
    if any(args.publish_every) and not args.database:
        raise SystemExit("--during-publish needs --database (the bench runner key is trusted there first)")
    if args.url:
        measure(args, loopback_only(args.url))
        return
    if not args.database:
        raise SystemExit("give --database (a server is started on it) or --url")
    args.label = args.label or f"{urlsplit(args.database).scheme.split('+')[0]}, {args.workers} workers"
    proc, base = start_server(args.database, args.workers, args.server_log)
    try:
        print(f"catalog: {run_count(args.database):,} runs · server {base} · {args.workers} workers · "
              f"clients: {args.driver}")
        measure(args, base)
    finally:
        stop(proc)


if __name__ == "__main__":
    main()
