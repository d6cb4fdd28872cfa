"""How long ``scripts/serve`` takes until the home page answers: the first start (an empty data
directory, so the bundled data is imported) and restarts with nothing changed (the install is
skipped, the catalog is already there).

    .venv/bin/python bench/serve_start.py [--restarts 3]

Each start runs ``scripts/serve --port P`` with ``XDG_DATA_HOME`` pointed at a fresh temporary
directory (the default SQLite catalog lives there), polls ``GET /`` until it answers 200, then stops
the server. Prints seconds per start, the medians and the load average; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - loopback only
            return bool(response.status == 200)
    except OSError:
        return False


def start_once(data_home: str, timeout: float = 900.0) -> float:
    """Seconds from launching scripts/serve until the home page answers 200."""
    port = _free_port()
    env = {**os.environ, "XDG_DATA_HOME": data_home}
    env.pop("KERNELINDEX_DATABASE_URL", None)
    log = open(Path(data_home) / f"serve-{port}.log", "w")  # noqa: SIM115 - closed below
    started = time.monotonic()
    server = subprocess.Popen([str(ROOT / "scripts" / "serve"), "--port", str(port), "--log-level", "warning"],
                              cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        while not _answers(f"http://127.0.0.1:{port}/"):
            if server.poll() is not None or time.monotonic() - started > timeout:
                raise RuntimeError(f"scripts/serve did not answer; see {log.name}")
            time.sleep(0.1)
        return time.monotonic() - started
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--restarts", type=int, default=3, help="restarts to time after the first start")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ki-serve-start-") as data_home:
        first = start_once(data_home)
        print(f"first start (empty catalog, bundled data imported): {first:.1f} s  load {_load()}")
        restarts = []
        for i in range(args.restarts):
            restarts.append(start_once(data_home))
            print(f"restart {i + 1} (nothing changed): {restarts[-1]:.1f} s  load {_load()}")
    if restarts:
        print(f"median restart: {statistics.median(restarts):.1f} s over {len(restarts)}")


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


if __name__ == "__main__":
    main()
