"""Start-up of the ``ki`` command as a ratio to a bare ``python -c pass`` (issue 22 item 3).

Prints the median wall time and CPU time (user + system) of N runs of each command and their ratios to
the interpreter's own start, with the load average (the machines are 2 noisy cores shared with other
work: ratios travel better than seconds, and CPU time is what contention inflates least).
With ``--api URL`` also times a lookup against a running server (``ki search … --api URL``).

    .venv/bin/python bench/cli_start.py [--runs 9] [--api http://127.0.0.1:8000]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

KI = str(Path(sys.executable).with_name("ki"))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def median_seconds(argv: list[str], runs: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``runs`` runs of ``argv``."""
    walls, cpus = [], []
    for _ in range(runs):
        cpu_before, start = _children_cpu(), time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        walls.append(time.perf_counter() - start)
        cpus.append(_children_cpu() - cpu_before)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--api", help="a running KernelIndex server to time a lookup against")
    args = parser.parse_args()
    cases = {"python -c pass": [sys.executable, "-c", "pass"],
             "ki --help": [KI, "--help"], "ki --version": [KI, "--version"]}
    if args.api:
        cases["ki search … --api"] = [KI, "search", "rope", "seq=2048", "hidden=8192", "a100", "--api", args.api]
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    base: tuple[float, float] | None = None
    for label, argv in cases.items():
        wall, cpu = median_seconds(argv, args.runs)
        base = base or (wall, cpu)
        print(f"{label:22s} wall {wall * 1000:6.0f} ms ({wall / base[0]:4.2f}×)   "
              f"cpu {cpu * 1000:6.0f} ms ({cpu / base[1]:4.2f}× python -c pass)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
