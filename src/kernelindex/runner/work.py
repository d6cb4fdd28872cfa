"""``ki runner work``: fulfil measurement requests for a server, on this machine's GPU.

Loop: claim one replica of an open request for this GPU product (a lease), keep the lease alive with
heartbeats, measure with the same session as ``ki verify``, upload the signed bundle, and mark the
replica done — or failed, with the reason (an adapter that does not install, a crash). A runner that
stops heart-beating loses its lease; the replica returns to the queue for another runner.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from kernelindex import registry, urls
from kernelindex.domain.manifests import WorkloadCase, digest_of, parse_manifest
from kernelindex.domain.units import format_duration
from kernelindex.trust.claims import signed_claim
from kernelindex.trust.keys import load_private_key
from kernelindex.trust.uploads import pack_bundle

Say = Callable[[str], None]


class WorkError(RuntimeError):
    """The server refused something the loop cannot work around (bad key, untrusted runner)."""


@dataclass(frozen=True)
class RunnerIdentity:
    name: str
    key_id: str
    key_path: Path


@dataclass
class WorkOptions:
    min_samples: int = 100
    time_budget_s: float = 4.0
    poll_seconds: float = 10.0
    test_device_product: str | None = None  # measure on the CPU test device (tests of the loop)


class Server:
    """The few API calls the loop makes."""

    def __init__(self, url: str, api_key: str, client: httpx.Client | None = None) -> None:
        self.url = url.rstrip("/")
        self.http = client or httpx.Client(timeout=120)
        self.headers = {"authorization": f"Bearer {api_key}"}

    def _post(self, path: str, headers: dict[str, str] | None = None, **kwargs: Any) -> httpx.Response:
        return self.http.post(self.url + urls.api(path), headers={**self.headers, **(headers or {})}, **kwargs)

    def claim(self, gpu: str, runner: RunnerIdentity) -> dict[str, Any] | None:
        """Claim work, proving with a claim signed by the runner's private key that this is the runner."""
        body = signed_claim(load_private_key(runner.key_path), gpu)
        response = self._post(urls.CLAIMS, json=body)
        if response.status_code == 204:
            return None
        return _ok(response, "claiming a request")

    def heartbeat(self, request_id: int, replica: int, token: str) -> bool:
        response = self._post(urls.replica(request_id, replica, "heartbeat"), json={"token": token})
        return response.status_code == 200

    def upload(self, bundle: Path) -> dict[str, Any]:
        response = self._post(urls.BUNDLES, content=pack_bundle(bundle), headers={"content-type": "application/gzip"})
        return _ok(response, "uploading the bundle")

    def complete(self, request_id: int, replica: int, token: str, **outcome: str) -> dict[str, Any]:
        response = self._post(urls.replica(request_id, replica, "complete"), json={"token": token, **outcome})
        return _ok(response, "marking the request")


def _ok(response: httpx.Response, doing: str) -> dict[str, Any]:
    if response.status_code >= 400:
        try:
            detail = response.json().get("detail", response.text)
        except ValueError:
            detail = response.text
        raise WorkError(f"{doing}: the server answered {response.status_code}: {detail}")
    return dict(response.json())


class Heartbeat:
    """Renews the lease every third of its length until stopped; ``lost`` once the server refuses."""

    def __init__(self, server: Server, claim: dict[str, Any]) -> None:
        self.server, self.claim = server, claim
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True, name="kernelindex-heartbeat")

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _beat(self) -> None:
        interval = max(0.5, float(self.claim["lease_seconds"]) / 3)
        while not self._stop.wait(interval):
            try:
                alive = self.server.heartbeat(self.claim["request"]["id"], self.claim["replica"], self.claim["token"])
            except httpx.HTTPError:
                continue  # a network blip: the next beat may get through before the lease ends
            if not alive:
                self.lost = True
                return


def gpu_slug(product: str) -> str:
    gpu = registry.gpu_for_product(product)
    if gpu is None:
        raise WorkError(f"this GPU ({product}) is not in the datasheet table, so no request can name it")
    return gpu.slug


def describe(request: dict[str, Any]) -> str:
    axes = " ".join(f"{k}={v}" for k, v in request["request"]["axes"].items())
    dtypes = " ".join(request["request"].get("dtypes", {}).values())
    return f"request {request['id']} · {request['operation']} {axes} {dtypes} on {request['gpu']}"


def fulfil(server: Server, claim: dict[str, Any], runner: RunnerIdentity, options: WorkOptions, say: Say) -> str:
    """Measure one claimed replica, upload and report it. Returns the one-line summary."""
    request, replica, token = claim["request"], claim["replica"], claim["token"]
    started = time.monotonic()
    label = f"{describe(request)} (replica {replica})"
    with Heartbeat(server, claim) as beat, tempfile.TemporaryDirectory(prefix="ki-work-") as scratch:
        try:
            signer = RunnerIdentity(claim.get("runner", runner.name), runner.key_id, runner.key_path)
            runs, bundle = measure(request, signer, options, Path(scratch) / "bundle", say)
            if beat.lost:
                return f"{label}: lease lost while measuring; not uploaded (another runner has it now)"
            say(f"  uploading the signed bundle ({len(runs)} runs) …")
            uploaded = server.upload(bundle)
        except Exception as exc:  # noqa: BLE001 - any failure is reported to the server, then the loop goes on
            if beat.lost:
                return f"{label}: lease lost while measuring; another runner has it now"
            server.complete(request["id"], replica, token, failure=f"{type(exc).__name__}: {exc}"[:4000])
            return f"{label}: failed — {exc} ({time.monotonic() - started:.1f} s)"
    server.complete(request["id"], replica, token, bundle=uploaded["bundle"])
    figures = ", ".join(runs) or "no runs"
    return f"{label}: done — {figures}; bundle {uploaded['bundle'][:19]}… ({time.monotonic() - started:.1f} s)"


def measure(request: dict[str, Any], runner: RunnerIdentity, options: WorkOptions, out: Path,
            say: Say) -> tuple[list[str], Path]:
    """Run the ``ki verify`` session on the request's workload; the run figures and the bundle."""
    from kernelindex.runner.campaign import outcome_rows
    from kernelindex.runner.session import Plan, run_session

    operation = registry.load_operation(request["operation"])
    workload = parse_manifest(request["workload"], f"request {request['id']} workload")
    if not isinstance(workload, WorkloadCase):
        raise WorkError(f"request {request['id']}: its workload is a {workload.kind}, not a WorkloadCase")
    keys: list[str] | None = request["request"].get("implementations")
    regions: tuple[str, ...] = tuple(request["request"].get("regions") or ("forward",))
    say(f"  measuring {len(keys) if keys else 'every available'} implementation(s), {', '.join(regions)} …")
    plan: Plan = [(operation, [workload], keys, {digest_of(workload): regions})]
    session = run_session(plan, key_path=runner.key_path, runner_name=runner.name,
                          key_id=runner.key_id, out_dirs=[out], min_samples=options.min_samples,
                          time_budget_s=options.time_budget_s, console=None,
                          test_device_product=options.test_device_product)
    result = session.results[0]
    if not session.bundles:
        reasons = "; ".join(result.skipped.values()) or "no implementation ran"
        raise WorkError(f"nothing measured: {reasons}")
    rows = outcome_rows(result)
    return [f"{r['implementation']}{'' if r['region'] == 'forward' else ' ' + r['region']} "
            f"{format_duration(r['median_ns'])} ({r['status']})" for r in rows], out


def work_loop(server: Server, runner: RunnerIdentity, gpu: str, options: WorkOptions, say: Say, *,
              once: bool) -> int:
    """Claim and fulfil requests until stopped (``once``: at most one). Returns how many were handled."""
    handled = 0
    while True:
        claim = server.claim(gpu, runner)
        if claim is None:
            if once:
                say(f"No open request for {gpu} that {runner.name} has not served.")
                return handled
            time.sleep(options.poll_seconds)
            continue
        say(f"Claimed {describe(claim['request'])}, replica {claim['replica']} "
            f"(lease {claim['lease_seconds']:.0f} s, renewed by heartbeats)")
        say(fulfil(server, claim, runner, options, say))
        handled += 1
        if once:
            return handled
