"""Start-up of the ``ki`` command as a ratio to a bare ``python -c pass`` (issue 22 item 3).

Prints the median wall time and CPU time (user + system) of N runs of each command and their ratios to
the interpreter's own start, with the load average (the machines are 2 noisy cores shared with other
work: ratios travel better than seconds, and CPU time is what contention inflates least).
With ``--database URL`` also times answers from a local catalog (``ki show operation rope``, ``ki show run
ID``, a heavy operation's ``ki show operation`` and a second search: the read path included, not only the start);
``--against KI`` times another tree's ``ki`` too (e.g. main's), alternating the two run by run, and prints both
medians and their ratio; with ``--api URL`` lookups against a running server
(``ki search … --api URL``, ``ki show … --api URL``; the goal is under 0.5 s); ``--serve URL`` starts that
server itself (``ki serve`` on a free local port over the catalog at URL, stopped at the end; the first
start of an empty catalog imports the bundled data, minutes). ``--quiet-below L`` waits
(up to ``--quiet-wait`` seconds) before each command until the 1-minute load average is under L, and
prints the load each command ran at.

    .venv/bin/python bench/cli_start.py [--runs 9] [--database sqlite:///…]
        [--api http://127.0.0.1:8000 | --serve sqlite:///…]
        [--run RUN_ID] [--heavy OPERATION] [--against /work/main/.venv/bin/ki]
        [--quiet-below 2 --quiet-wait 600]

With PYTHONDONTWRITEBYTECODE set (as on the shared machines) every command would compile the modules it
imports from source; the bench compiles the package's bytecode once first, as an installed ``ki`` has it.
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

KI = str(Path(sys.executable).with_name("ki"))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``argv``."""
    cpu_before, start = _children_cpu(), time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start, _children_cpu() - cpu_before


def median_seconds(argvs: list[list[str]], runs: int) -> list[tuple[float, float]]:
    """Median wall and CPU seconds of ``runs`` runs of each of ``argvs``, run in turn (A B A B …) so that
    the load of the moment weighs on each alike."""
    times: list[list[tuple[float, float]]] = [[] for _ in argvs]
    for _ in range(runs):
        for argv, kept in zip(argvs, times, strict=True):
            kept.append(timed(argv))
    return [(statistics.median(w for w, _ in kept), statistics.median(c for _, c in kept)) for kept in times]


def answer(argv: list[str]) -> tuple[int, str, str]:
    """What ``argv`` prints and its exit code (a narrow terminal's width for both trees alike)."""
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env={**os.environ, "COLUMNS": "100"})
    return done.returncode, done.stdout, done.stderr


def compile_bytecode() -> None:
    """Compile the package's modules once (an installed ``ki`` has its bytecode; a tree run with
    PYTHONDONTWRITEBYTECODE would compile them again in every command)."""
    import compileall

    import kernelindex

    compileall.compile_dir(str(Path(kernelindex.__file__).parent), quiet=1)


API_GOAL_S = 0.5  # issue 22 item 3: a lookup against a server; issue 46 item 4: a local ki search / show too


def wait_for_quiet(below: float | None, patience_s: float) -> float:
    """The 1-minute load average once it is under ``below`` (or ``patience_s`` ran out)."""
    deadline = time.monotonic() + patience_s
    while below is not None and os.getloadavg()[0] >= below and time.monotonic() < deadline:
        time.sleep(5)
    return os.getloadavg()[0]


@contextmanager
def local_server(database: str, patience_s: float = 900.0) -> Iterator[str]:
    """``ki serve`` over ``database`` on a free local port; its base URL once it answers."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([KI, "serve", "--database-url", database, "--port", str(port), "--log-level", "warning"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + patience_s
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/v1/operations/rope", timeout=30):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"ki serve over {database} did not answer on {base}") from None
                time.sleep(1)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)


def cases_of(args: argparse.Namespace) -> dict[str, list[str]]:
    cases = {"python -c pass": [sys.executable, "-c", "pass"],
             "ki --help": [KI, "--help"], "ki --version": [KI, "--version"]}
    if args.database:
        local = ["--database", args.database]
        cases["ki search rope seq=2048 hidden=8192 a100"] = [KI, "search", "rope", "seq=2048", "hidden=8192", "a100",
                                                             *local]
        cases["ki search rms norm h100 bf16"] = [KI, "search", "rms", "norm", "h100", "bf16", *local]
        cases["ki show operation rope"] = [KI, "show", "operation", "rope", *local]
        cases["ki show operation (heavy)"] = [KI, "show", "operation", args.heavy, *local]
        cases[f"ki show run {args.run}"] = [KI, "show", "run", args.run, *local]
    if args.api:
        api = ["--api", args.api]
        cases["ki search … --api"] = [KI, "search", "rope", "seq=2048", "hidden=8192", "a100", *api]
        cases["ki show operation rope --api"] = [KI, "show", "operation", "rope", *api]
        cases[f"ki show run {args.run} --api"] = [KI, "show", "run", args.run, *api]
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--api", help="a running KernelIndex server to time lookups against")
    parser.add_argument("--serve", metavar="DATABASE", help="start ki serve over this catalog and time --api lookups")
    parser.add_argument("--database", help="a local catalog to time answers from (ki show …)")
    parser.add_argument("--run", default="98eb698d937fc733", help="the run id ki show run looks up")
    parser.add_argument("--heavy", default="gemm-a8w8-blockscale-n8192-k512",
                        help="an operation with many runs for ki show operation (the full catalog's largest)")
    parser.add_argument("--against", metavar="KI", help="another tree's ki to time alongside, alternated run by run")
    parser.add_argument("--quiet-below", type=float, help="wait for a 1-minute load average under this")
    parser.add_argument("--quiet-wait", type=float, default=600.0, help="seconds to wait for it, per command")
    args = parser.parse_args()
    if args.serve:
        with local_server(args.serve) as args.api:
            measure(args)
    else:
        measure(args)


def measure(args: argparse.Namespace) -> None:
    compile_bytecode()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    base: tuple[float, float] | None = None
    for label, argv in cases_of(args).items():
        load = wait_for_quiet(args.quiet_below, args.quiet_wait)
        other = [args.against, *argv[1:]] if args.against and argv[0] == KI else None
        if other and "--database" in argv:
            print(f"{'':34s} same output as {args.against}: {'yes' if answer(argv) == answer(other) else 'NO'}")
        (wall, cpu), *against = median_seconds([argv, *([other] if other else [])], args.runs)
        base = base or (wall, cpu)
        goal_met = "--api" in argv or "--database" in argv and argv[1] in ("search", "show")
        goal = f"  (goal < {API_GOAL_S} s: {'met' if wall < API_GOAL_S else 'NOT met'})" if goal_met else ""
        print(f"{label:34s} wall {wall * 1000:6.0f} ms ({wall / base[0]:5.2f}×)   "
              f"cpu {cpu * 1000:6.0f} ms ({cpu / base[1]:5.2f}× python -c pass)   load {load:5.2f}{goal}")
        for other_wall, other_cpu in against:
            print(f"{'  against ' + args.against:34s} wall {other_wall * 1000:6.0f} ms   cpu {other_cpu * 1000:6.0f} ms"
                  f"   (this tree / that: wall {wall / other_wall:4.2f}×, cpu {cpu / other_cpu:4.2f}×)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
