"""The H200 proof of the runner fleet (issue 12): a fresh catalog served by ``ki serve``, a new runner key
trusted there, a measurement request for a shape the catalog has never measured, one ``ki runner work
--once`` that claims, measures, signs and uploads it, then what the site shows: the request before and
after, the change feed's completion, the ranked rows of the operation page and the run page's
"Verified".

    python bench/fleet_proof.py --out OUT [--test-device-product 'NVIDIA H200']   # the latter: CPU rehearsal

Writes ``OUT/proof.log``, ``request-before.json``, ``request-after.json``, ``run-page.html``,
``serve.log`` and ``work.log``. Exit status 0 only if the request ends ``done`` with a verified run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

PORT = 8765
REHEARSAL = {"operation": "embedding", "axes": {"batch": 4, "seq": 64, "vocab": 1000, "hidden": 64},
             "dtypes": {"T": "fp32"}, "gpu": "h200", "implementations": ["baseline"], "replicas": 1}
REQUEST = {"operation": "rope", "axes": {"seq": 4096, "hidden": 4096, "q_heads": 32, "kv_heads": 8},
           "dtypes": {"T": "bf16"}, "gpu": "h200", "implementations": ["baseline", "liger"], "replicas": 1}


class Proof:
    def __init__(self, out: Path, home: Path) -> None:
        self.out, self.home = out, home
        self.log_file = (out / "proof.log").open("w")
        self.env = {**os.environ, "XDG_DATA_HOME": str(home / "xdg"), "PYTHONUNBUFFERED": "1",
                    "KERNELINDEX_DATABASE_URL": f"sqlite:///{home / 'catalog.sqlite'}"}
        self.server = f"http://127.0.0.1:{PORT}"
        self.started = time.monotonic()
        self.asked_at = ""  # RFC 3339, set just before the request: the change feed from there on

    def say(self, line: str) -> None:
        stamped = f"[{time.monotonic() - self.started:6.1f} s] {line}"
        print(stamped, flush=True)
        self.log_file.write(stamped + "\n")
        self.log_file.flush()

    def ki(self, *args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "kernelindex.cli", *args], env=self.env, capture_output=True,
                              text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"ki {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
        return done.stdout

    def token(self, scope: str) -> str:
        data = json.loads(self.ki("keys", "create", "--name", f"fleet-proof-{scope.replace(':', '-')}",
                                  "--scope", scope, "--json"))
        return str(data.get("token") or data.get("key") or data.get("secret"))

    def serve(self) -> subprocess.Popen[bytes]:
        log = (self.out / "serve.log").open("w")
        proc = subprocess.Popen([sys.executable, "-m", "kernelindex.cli", "serve", "--port", str(PORT),
                                 "--log-level", "warning"], env=self.env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"ki serve exited with {proc.returncode}; see serve.log")
            try:
                if httpx.get(f"{self.server}/api/v1/requests", timeout=5).status_code == 200:
                    return proc
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError("ki serve did not answer within 180 s")


def _keys(proof: Proof, test_product: str | None) -> Path:
    key_dir = proof.home / "fleet-key"
    name = "h200-fleet-proof" if not test_product else "cpu-fleet-rehearsal"
    proof.ki("runner", "keygen", "--out", str(key_dir), "--name", name)
    proof.say(proof.ki("runner", "trust", str(key_dir / "runner.pub")).strip().splitlines()[-1])
    return key_dir / "runner.key"


def _request(proof: Proof, http: httpx.Client, token: str, request: dict[str, Any]) -> int:
    proof.asked_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))
    answer = http.post(f"{proof.server}/api/v1/requests", json=request, headers={"authorization": f"Bearer {token}"})
    if answer.status_code not in (200, 201):
        raise RuntimeError(f"request refused: {answer.status_code} {answer.text[:500]}")
    number = int(answer.json()["id"])
    before = http.get(f"{proof.server}/api/v1/requests/{number}").json()
    (proof.out / "request-before.json").write_text(json.dumps(before, indent=1))
    proof.say(f"request {number} state {before['state']} replicas {[r['state'] for r in before['replicas']]}")
    return number


def _work(proof: Proof, token: str, key: Path, test_product: str | None) -> int:
    command = [sys.executable, "-m", "kernelindex.cli", "runner", "work", "--server", proof.server, "--api-key",
               token, "--key", str(key), "--once", "--poll", "1"]
    if test_product:
        command += ["--test-device-product", test_product]
    with (proof.out / "work.log").open("w") as log:
        done = subprocess.run(command, env=proof.env, stdout=log, stderr=subprocess.STDOUT, check=False,
                              timeout=400)
    for line in (proof.out / "work.log").read_text().splitlines():
        proof.say(f"  work | {line}")
    return done.returncode


def _check(proof: Proof, http: httpx.Client, number: int, request: dict[str, Any]) -> bool:
    after = http.get(f"{proof.server}/api/v1/requests/{number}").json()
    (proof.out / "request-after.json").write_text(json.dumps(after, indent=1))
    replicas = [(r["replica"], r["state"], r.get("runner"), r.get("bundle_digest")) for r in after["replicas"]]
    proof.say(f"request {number} state {after['state']} {replicas}")
    feed = http.get(f"{proof.server}/api/v1/changes", params={"since": proof.asked_at}).json()
    items: list[dict[str, Any]] = feed.get("changes", [])
    completions = [item for item in items if item.get("kind") == "request_completed"]
    proof.say(f"changes feed: {completions[0]['title'] if completions else 'no request completion'}")
    operation = http.get(f"{proof.server}/api/v1/operations/{request['operation']}", params={"gpu": "h200"}).json()
    key = next((w["key"] for w in operation["workloads"] if w["axes"] == request["axes"]), None)
    if key is None:
        proof.say("the requested workload is not on the operation page")
        return False
    page = http.get(f"{proof.server}/api/v1/operations/{request['operation']}", params={"gpu": "h200", "workload": key})
    (proof.out / "operation.json").write_text(page.text)
    for row in page.json()["ranked"]:
        impl = row["implementation"]
        title = impl.get("title", impl) if isinstance(impl, dict) else impl
        median = row["median_ns"] / 1000
        proof.say(f"  #{row['rank_label']} {title}  {median:.2f} us  {row['evidence']}  /runs/{row['run_id']}")
    ranked = [row["run_id"] for row in page.json()["ranked"]]
    return after["state"] == "done" and _run_page(proof, http, ranked)


def _run_page(proof: Proof, http: httpx.Client, run_ids: list[str]) -> bool:
    for run_id in run_ids:
        text = json.dumps(http.get(f"{proof.server}/api/v1/runs/{run_id}").json())
        if "h200-fleet-proof" in text or "cpu-fleet-rehearsal" in text:
            page = http.get(f"{proof.server}/runs/{run_id}")
            (proof.out / "run-page.html").write_text(page.text)
            proof.say(f"run page /runs/{run_id} ({page.status_code}) says 'Verified': {'Verified' in page.text}")
            return "Verified" in page.text
    proof.say("no run of the fleet runner among the ranked rows")
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--test-device-product", default="")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    test_product = args.test_device_product or None
    with tempfile.TemporaryDirectory(prefix="fleet-proof-") as home:
        proof = Proof(args.out, Path(home))
        proof.say("ki serve on a fresh SQLite catalog (bootstrap imports the shipped data)")
        server = proof.serve()
        try:
            proof.say("server answers")
            key = _keys(proof, test_product)
            tokens = {scope: proof.token(scope) for scope in ("bundles:write", "requests:write")}
            with httpx.Client(timeout=60) as http:
                request = REHEARSAL if test_product else REQUEST  # the CPU has no Transformers or Liger here
                number = _request(proof, http, tokens["requests:write"], request)
                proof.say(f"ki runner work --once exited {_work(proof, tokens['bundles:write'], key, test_product)}")
                ok = _check(proof, http, number, request)
        finally:
            server.terminate()
            server.wait(timeout=30)
    proof.say(f"fleet proof {'PASSED' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
