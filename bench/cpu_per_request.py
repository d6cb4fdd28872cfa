"""CPU milliseconds the server spends per request of the load bench's mix — a figure that holds on a
shared machine, where wall-time latency does not.

    .venv/bin/python bench/cpu_per_request.py --url http://127.0.0.1:PORT --pid PID [--seconds 15] [--rounds 3]

Against a running ``ki serve`` (one worker is simplest: give its pid; with several, give the parent's
and every descendant is counted). Each answer of the mix is computed once first, then a 5 s untimed
round runs; each timed round drives ``wrk`` (one thread, ``--clients`` connections, the mix of
``bench/load.py``) and divides the server processes' CPU seconds (user + system, /proc) by the
requests answered. Prints each round, their median and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import loopback_only, targets, wrk_summary  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            children = []
        todo.extend(int(child) for child in children)
    return found


def cpu_seconds(pid: int) -> float:
    total = 0
    for each in tree(pid):
        try:
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / TICKS


def wrk_requests(base: str, paths: list[str], clients: int, seconds: float) -> int:
    requests, *_rest, errors, bad = wrk_summary(base, paths, clients, seconds)
    if errors or bad:
        raise SystemExit(f"wrk saw {errors} transport errors and {bad} bad statuses")
    return requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--pid", type=int, required=True, help="the server's process id (descendants counted)")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=16)
    args = parser.parse_args()
    base = loopback_only(args.url)
    paths = targets(base)
    for path in sorted(set(paths)):
        httpx.get(base + path, timeout=120)
    wrk_requests(base, paths, args.clients, 5)
    figures = []
    for round_ in range(1, args.rounds + 1):
        load = os.getloadavg()[0]
        before = cpu_seconds(args.pid)
        requests = wrk_requests(base, paths, args.clients, args.seconds)
        used = cpu_seconds(args.pid) - before
        figures.append(1000 * used / requests)
        print(f"round {round_}: {requests:,} requests, {used:.2f} CPU s, {figures[-1]:.3f} CPU ms/request "
              f"(load {load:.2f})", flush=True)
    print(f"median {statistics.median(figures):.3f} CPU ms/request; load now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
