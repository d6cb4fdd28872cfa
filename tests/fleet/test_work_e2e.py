"""End to end: a real server, two `ki runner work` processes (CPU test device, two runner keys), ten
measurement requests of which two ask for two replicas. Every replica is done exactly once, both
runners work, the runs are published, and the replicated requests show `replicated`. A runner killed
mid-request loses its lease and the other finishes the request."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fleet_helpers import bearer, claim_body, make_runner, shipped

from kernelindex.catalog.db import Catalog
from kernelindex.readmodel.loading import load_operation
from kernelindex.trust import keys
from kernelindex.trust.bundles import publish_bundle, verify_directory

pytest.importorskip("torch")

PRODUCT = "NVIDIA H100 80GB HBM3"  # announced by the CPU test device; requests name its GPU slug
GPU = "h100-sxm"


def _request(batch: int, replicas: int = 1) -> dict:
    return {"operation": "embedding", "axes": {"batch": batch, "seq": 4, "vocab": 32, "hidden": 16},
            "dtypes": {"T": "fp32"}, "gpu": GPU, "implementations": ["baseline"], "replicas": replicas}


class Runners:
    def __init__(self, server: str, token: str, tmp: Path) -> None:
        self.server, self.token, self.tmp = server, token, tmp
        self.procs: dict[str, subprocess.Popen[str]] = {}

    def start(self, name: str, key: Path) -> subprocess.Popen[str]:
        log = (self.tmp / f"{name}.log").open("w")
        command = [sys.executable, "-m", "kernelindex.cli", "runner", "work", "--server", self.server,
                   "--api-key", self.token, "--key", str(key), "--poll", "0.2", "--min-samples", "10",
                   "--time-budget", "0.5", "--test-device-product", PRODUCT]
        # SIGINT at its default, so the runner's Python turns it into KeyboardInterrupt: a background job of a
        # non-interactive shell (a CI step) starts with SIGINT ignored, and the runner would then sit out stop()'s wait.
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"},  # a killed runner's log is complete
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        self.procs[name] = proc
        return proc

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text()

    def says(self, name: str, text: str, seconds: float = 60) -> bool:
        """Whether the runner's log says ``text`` within ``seconds``: a runner prints a request's line after the
        server answered its completion, so a test that saw the request done may read the log before it is written
        (on a loaded machine it was, and the test failed)."""
        deadline = time.monotonic() + seconds
        while text not in self.log(name):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.fixture
def runners(live_server: str, tokens: dict[str, str], tmp_path: Path) -> Iterator[Runners]:
    group = Runners(live_server, tokens["bundles:write"], tmp_path)
    yield group
    group.stop()


def _wait(http: httpx.Client, server: str, done: callable, seconds: float = 240) -> list[dict]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        items = http.get(f"{server}/api/v1/requests").json()["items"]
        if done(items):
            return items
        time.sleep(0.3)
    raise AssertionError(f"timed out; requests: {[(r['id'], r['state']) for r in items]}")


def test_two_runners_fulfil_ten_requests(runners: Runners, live_server: str, app: Any, fleet_catalog: Catalog,
                                         tokens: dict[str, str], tmp_path: Path) -> None:
    app.state.lease_seconds = 60.0  # heart-beating runners keep their leases even on a loaded machine
    keys = {name: make_runner(tmp_path, name, fleet_catalog) for name in ("runner-a", "runner-b")}
    with httpx.Client(timeout=30) as http:
        for batch in range(1, 11):
            answer = http.post(f"{live_server}/api/v1/requests", headers=bearer(tokens["requests:write"]),
                               json=_request(batch, replicas=2 if batch in (3, 7) else 1))
            assert answer.status_code == 201, answer.text
        for name, key in keys.items():
            runners.start(name, key)
        items = _wait(http, live_server, lambda rs: all(r["state"] == "done" for r in rs))
    replicas = [(r["request"]["axes"]["batch"], p) for r in items for p in r["replicas"]]
    assert len(replicas) == 12 and all(p["state"] == "done" and p["bundle_digest"] for _, p in replicas)
    assert all(p["attempts"] == 1 for _, p in replicas)  # each replica done exactly once
    assert {p["runner"] for _, p in replicas} == set(keys), "both runners worked"
    for batch in (3, 7):
        assert {p["runner"] for b, p in replicas if b == batch} == set(keys)  # two different identities
    data = load_operation(fleet_catalog, "embedding")
    runs = [r for r in data.runs if r.status == "passed"]
    assert len(runs) == 12 and all(r.attested for r in runs)
    runner = {r.digest: r.spec.runner.name if r.spec.runner else None for r in runs}
    evidence = {(runner[r.digest], data.workloads[r.workload].spec.axes["batch"]): r.evidence for r in runs}
    assert {k: v for k, v in evidence.items() if k[1] in (3, 7)} == {
        (name, batch): "replicated" for name in keys for batch in (3, 7)}
    assert all(v == "verified" for k, v in evidence.items() if k[1] not in (3, 7))
    for name in keys:
        assert runners.says(name, ": done — baseline"), runners.log(name)


def test_a_killed_runner_loses_its_lease_and_the_other_finishes(
        runners: Runners, live_server: str, app: Any, fleet_catalog: Catalog, tokens: dict[str, str],
        tmp_path: Path) -> None:
    app.state.lease_seconds = 5.0  # short, so the killed runner's lease runs out soon; long enough for heartbeats
    keys = {name: make_runner(tmp_path, name, fleet_catalog) for name in ("runner-a", "runner-b")}
    with httpx.Client(timeout=30) as http:
        http.post(f"{live_server}/api/v1/requests", headers=bearer(tokens["requests:write"]), json=_request(5))
        victim = runners.start("runner-a", keys["runner-a"])
        _wait(http, live_server, lambda rs: rs[0]["state"] == "claimed", 60)
        victim.kill()  # mid-request: it holds the lease and stops heart-beating
        victim.wait(timeout=10)
        runners.start("runner-b", keys["runner-b"])
        items = _wait(http, live_server, lambda rs: rs[0]["state"] == "done")
    (replica,) = items[0]["replicas"]
    assert replica["runner"] == "runner-b" and replica["attempts"] == 2
    # runner-a's console output is lost with it (killed before its buffer was flushed); the replica's
    # two attempts above show it held the claim.
    assert runners.says("runner-b", ": done — baseline"), runners.log("runner-b")


def test_an_attacker_cannot_take_or_fake_a_real_runners_work(
        runners: Runners, live_server: str, app: Any, fleet_catalog: Catalog, tokens: dict[str, str],
        tmp_path: Path) -> None:
    """Over real HTTP: claiming as runner-a without its private key is refused; a trusted but cheating
    runner completes nothing with a shipped bundle or a bundle of another GPU; runner-a does the work."""
    app.state.lease_seconds = 60.0
    honest, mallory = (make_runner(tmp_path, name, fleet_catalog) for name in ("runner-a", "mallory"))
    token = tokens["bundles:write"]
    with httpx.Client(timeout=30) as http:
        asked = http.post(f"{live_server}/api/v1/requests", headers=bearer(tokens["requests:write"]),
                          json=_request(4, replicas=2)).json()
        honest_id = keys.key_id_of(keys.public_key_hex(keys.load_private_key(honest)))
        forged = http.post(f"{live_server}/api/v1/claims", headers=bearer(token),
                           json={**claim_body(mallory, GPU), "runner_key_id": honest_id})
        assert forged.status_code == 403 and forged.json()["code"] == "claim_not_proven"
        claim = http.post(f"{live_server}/api/v1/claims", headers=bearer(token), json=claim_body(mallory, GPU)).json()
        shipped_digest = verify_directory(shipped("rope")).digest
        publish_bundle(fleet_catalog, shipped("rope"))
        faked = http.post(f"{live_server}/api/v1/requests/{asked['id']}/replicas/{claim['replica']}/complete",
                          headers=bearer(token), json={"token": claim["token"], "bundle": shipped_digest})
        assert faked.status_code == 422 and "not published with runs signed by mallory" in faked.json()["detail"]
        runners.start("runner-a", honest)
        items = _wait(http, live_server, lambda rs: any(p["state"] == "done" for p in rs[0]["replicas"]))
    states = {p["runner"]: p["state"] for p in items[0]["replicas"]}
    assert states == {"mallory": "claimed", "runner-a": "done"}, items[0]["replicas"]
