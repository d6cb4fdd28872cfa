"""``ki serve``: imports the bundled data once, before the workers start, then serves with N workers,
each of which writes the access log. It starts even when the shipped runner key was trusted by hand."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

SHIPPED_KEYS = Path(__file__).resolve().parents[2] / "src" / "kernelindex" / "data" / "runners"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# One worker over Liger alone (a few seconds); two over the tests' parts, whose verified bundles meet the shipped key
# trusted by hand (~20 s of import on a busy machine: once is enough).
@pytest.mark.parametrize(("workers", "parts"), [(1, "liger"), (2, None)])
def test_ki_serve_imports_once_then_serves(tmp_path: Path, workers: int, parts: str | None) -> None:
    port = _free_port()
    url = f"sqlite:///{tmp_path / 'catalog.sqlite'}"
    env = {k: v for k, v in os.environ.items() if k != "KERNELINDEX_DATABASE_URL"}
    if parts:
        env["KERNELINDEX_BUNDLED_PARTS"] = parts
    shipped_key = sorted(SHIPPED_KEYS.glob("*.pub"))[0]
    trusted = subprocess.run([sys.executable, "-m", "kernelindex.cli", "runner", "trust", str(shipped_key),
                              "--database", url], capture_output=True, text=True, env=env, timeout=120)
    assert trusted.returncode == 0, trusted.stderr
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernelindex.cli", "serve", "--port", str(port), "--workers", str(workers),
         "--database-url", url, "--log-level", "info"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/operations/rope", timeout=5)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
                assert time.monotonic() < deadline, "ki serve did not answer within 120 s"
                time.sleep(0.2)
        assert response.status_code == 200
        assert "eligible runs" in response.text
        for _ in range(6):  # every worker answers from the same, already imported catalog
            assert httpx.get(f"http://127.0.0.1:{port}/records", timeout=30).status_code == 200
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        output = proc.communicate(timeout=30)[0].decode()
    assert f"Catalog: {url}" in output
    assert f"with {workers} worker(s)" in output
    assert "Traceback" not in output
    assert output.count("kernelindex.web.access: GET /records 200") == 6, output[-2000:]
