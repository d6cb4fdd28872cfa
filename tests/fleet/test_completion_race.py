"""Issue 51, item 5: two concurrent completions with one bundle complete exactly one replica.

The attack: a runner holding replicas of two requests for the same workload uploads one bundle and
sends both completions at once; the check "this bundle completed no other replica" was read by both
before either wrote, so one bundle completed two requests (2 of 3 rounds, both backends). Here both
completions race through a real server, with the fulfilment check slowed to widen the window they used:
exactly one is done, the other is a 422 naming the request the bundle completed, and its replica stays
claimed."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from fleet_helpers import bearer, claim_body, make_runner, resigned, shipped

from kernelindex.catalog.db import Catalog
from kernelindex.domain.manifests import digest_of, parse_manifest
from kernelindex.services import fleet
from kernelindex.trust.bundles import publish_bundle
from kernelindex.trust.uploads import pack_bundle

AXES = {"seq": 2048, "hidden": 8192, "q_heads": 32, "kv_heads": 8}  # a case of the shipped rope bundle


def _slow(check: Any) -> Any:
    def slowed(*args: Any) -> Any:
        time.sleep(0.3)  # the window between "no other replica used this bundle" and the write
        return check(*args)
    return slowed


def test_one_bundle_completes_one_request_however_its_completions_race(
        fleet_catalog: Catalog, client: TestClient, live_server: str, tokens: dict[str, str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    publish_bundle(fleet_catalog, shipped("rope"))
    key = make_runner(tmp_path, "runner-a", fleet_catalog)
    token = tokens["bundles:write"]
    for replicas in (1, 2):  # two requests for one workload (they differ, so they do not merge)
        body = {"operation": "rope", "axes": AXES, "dtypes": {"T": "bf16"}, "gpu": "h200", "replicas": replicas}
        assert client.post("/api/v1/requests", json=body, headers=bearer(tokens["requests:write"])).status_code == 201
    claims = [client.post("/api/v1/claims", json=claim_body(key, "h200"), headers=bearer(token)).json()
              for _ in range(2)]
    assert {c["request"]["id"] for c in claims} == {1, 2}
    workload = digest_of(parse_manifest(claims[0]["request"]["workload"], "test"))
    bundle = resigned(shipped("rope"), tmp_path / "now", key, "runner-a", 0, workload=workload,
                      observed_at=datetime.now(UTC) + timedelta(seconds=1))
    uploaded = client.post("/api/v1/bundles", content=pack_bundle(bundle),
                           headers={**bearer(token), "content-type": "application/gzip"})
    assert uploaded.status_code == 201, uploaded.text
    monkeypatch.setattr(fleet, "check_fulfils", _slow(fleet.check_fulfils))
    answers: list[httpx.Response] = []
    start = threading.Barrier(2)

    def complete(claim: dict[str, Any]) -> None:
        start.wait()
        answers.append(httpx.post(f"{live_server}/api/v1/requests/{claim['request']['id']}/replicas/"
                                  f"{claim['replica']}/complete", headers=bearer(token), timeout=30,
                                  json={"token": claim["token"], "bundle": uploaded.json()["bundle"]}))

    threads = [threading.Thread(target=complete, args=(c,)) for c in claims]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(a.status_code for a in answers) == [200, 422], [a.text for a in answers]
    refused = next(a for a in answers if a.status_code == 422).json()
    assert refused["code"] in ("not_fulfilled", "invalid_request") and "already completed request" in refused["detail"]
    states = sorted(r["state"] for i in (1, 2) for r in client.get(f"/api/v1/requests/{i}").json()["replicas"]
                    if r.get("runner") == "runner-a")
    assert states == ["claimed", "done"]
