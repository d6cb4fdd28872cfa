"""A runner cannot fake work (issue 23, items 2 and 12).

The attacks: claiming as ``kernelindex-h200-runner-2`` with only its (public) key id; completing with
the digest of a shipped bundle; completing an RTX 4090 request with an H200 bundle; a bundle naming
another runner. Each is refused with its code, and the catalog and the request are as they were."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from fleet_helpers import bearer, catalog_state, claim_body, make_runner, resigned, shipped

from kernelindex.catalog.db import Catalog
from kernelindex.domain.manifests import digest_of, parse_manifest
from kernelindex.trust import keys as runner_keys
from kernelindex.trust.bundles import BundleError, bundled_bundles, publish_bundle, verify_directory
from kernelindex.trust.claims import signed_claim
from kernelindex.trust.uploads import pack_bundle

AXES = {"seq": 2048, "hidden": 8192, "q_heads": 32, "kv_heads": 8}  # a case of the shipped rope bundle
RUNNER_2 = "kernelindex-h200-runner-2"


@pytest.fixture
def setting(client: TestClient, fleet_catalog: Catalog, tokens: dict[str, str], tmp_path: Path) -> dict[str, Any]:
    """runner-a (trusted, its key here), the shipped rope runs published, and a claimable rope request."""
    publish_bundle(fleet_catalog, shipped("rope"))
    key = make_runner(tmp_path, "runner-a", fleet_catalog)
    return {"key": key, "token": tokens["bundles:write"], "request": _ask(client, tokens, "h200")}


def _ask(client: TestClient, tokens: dict[str, str], gpu: str, replicas: int = 1) -> dict:
    body = {"operation": "rope", "axes": AXES, "dtypes": {"T": "bf16"}, "gpu": gpu, "replicas": replicas}
    answer = client.post("/api/v1/requests", json=body, headers=bearer(tokens["requests:write"]))
    assert answer.status_code == 201, answer.text
    return answer.json()


def _post(client: TestClient, token: str, path: str, body: dict) -> Any:
    return client.post(f"/api/v1{path}", json=body, headers=bearer(token))


def _upload(client: TestClient, token: str, bundle: Path) -> dict:
    answer = client.post("/api/v1/bundles", content=pack_bundle(bundle),
                         headers={**bearer(token), "content-type": "application/gzip"})
    assert answer.status_code in (200, 201), answer.text
    return answer.json()


def _runner_2_key_id() -> str:
    pub = next(p for p in (bundled_bundles()[0].parent.parent / "runners").iterdir() if p.stem == RUNNER_2)
    return runner_keys.load_public_key(pub).key_id


def test_a_claim_without_the_runner_key_is_refused(client: TestClient, fleet_catalog: Catalog,
                                                   setting: dict[str, Any], tmp_path: Path) -> None:
    token, mine = setting["token"], setting["key"]
    before = catalog_state(fleet_catalog)
    forged = {**claim_body(mine, "h200"), "runner_key_id": _runner_2_key_id()}  # signed by my key, not runner-2's
    stale = signed_claim(runner_keys.load_private_key(mine), "h200", now=datetime.now(UTC) - timedelta(hours=1))
    replayed = {**claim_body(mine, "h200"), "gpu": "b200"}  # signature made for h200, sent for b200
    for body, words in [(forged, "does not verify for runner key"), (stale, "more than 5 minutes"),
                        (replayed, "does not verify")]:
        answer = _post(client, token, "/claims", body)
        assert answer.status_code == 403 and answer.json()["code"] == "claim_not_proven", answer.text
        assert words in answer.json()["detail"]
    unsigned = {k: v for k, v in claim_body(mine, "h200").items() if k != "signature"}
    assert _post(client, token, "/claims", unsigned).status_code == 422
    assert client.get(f"/api/v1/requests/{setting['request']['id']}").json()["state"] == "open"
    assert catalog_state(fleet_catalog) == before


def test_a_signed_claim_is_accepted_once(client: TestClient, fleet_catalog: Catalog, setting: dict[str, Any],
                                         tokens: dict[str, str]) -> None:
    body = claim_body(setting["key"], "h200")
    first = _post(client, setting["token"], "/claims", body)
    assert first.status_code == 200 and first.json()["runner"] == "runner-a"
    _ask(client, tokens, "h200", replicas=2)  # something left to claim
    again = _post(client, setting["token"], "/claims", body)
    assert again.status_code == 403 and "already used" in again.json()["detail"]


def _claimed(client: TestClient, setting: dict[str, Any], gpu: str = "h200") -> dict:
    answer = _post(client, setting["token"], "/claims", claim_body(setting["key"], gpu))
    assert answer.status_code == 200, answer.text
    return answer.json()


def _refused_completion(client: TestClient, catalog: Catalog, setting: dict[str, Any], claim: dict, bundle: str,
                        words: str) -> None:
    before = catalog_state(catalog)
    request = claim["request"]["id"]
    answer = _post(client, setting["token"], f"/requests/{request}/replicas/{claim['replica']}/complete",
                   {"token": claim["token"], "bundle": bundle})
    assert answer.status_code == 422 and answer.json()["code"] in ("not_fulfilled", "invalid_request"), answer.text
    assert words in answer.json()["detail"], answer.json()["detail"]
    assert client.get(f"/api/v1/requests/{request}").json()["replicas"][claim["replica"] - 1]["state"] == "claimed"
    assert catalog_state(catalog) == before


def test_an_old_shipped_bundle_completes_nothing(client: TestClient, fleet_catalog: Catalog,
                                                 setting: dict[str, Any], tmp_path: Path) -> None:
    claim = _claimed(client, setting)
    softmax = next(p for p in bundled_bundles() if p.name == "h200-softmax-20261130")
    publish_bundle(fleet_catalog, softmax)  # runner-2's runs: attested, but not signed by runner-a
    _refused_completion(client, fleet_catalog, setting, claim, verify_directory(softmax).digest,
                        "is not published with runs signed by runner-a")
    workload = digest_of(parse_manifest(claim["request"]["workload"], "test"))
    old = resigned(shipped("rope"), tmp_path / "old", setting["key"], "runner-a", 0, workload=workload)
    _refused_completion(client, fleet_catalog, setting, claim, _upload(client, setting["token"], old)["bundle"],
                        "before the claim")


def test_a_bundle_published_before_the_claim_is_not_new(client: TestClient, fleet_catalog: Catalog,
                                                         setting: dict[str, Any], tmp_path: Path) -> None:
    workload = digest_of(parse_manifest(setting["request"]["workload"], "test"))
    early = resigned(shipped("rope"), tmp_path / "early", setting["key"], "runner-a", 0, workload=workload,
                     observed_at=datetime.now(UTC))
    digest = _upload(client, setting["token"], early)["bundle"]
    claim = _claimed(client, setting)
    _refused_completion(client, fleet_catalog, setting, claim, digest, "published at")


def test_an_h200_bundle_does_not_complete_a_4090_request(client: TestClient, fleet_catalog: Catalog,
                                                          setting: dict[str, Any], tokens: dict[str, str],
                                                          tmp_path: Path) -> None:
    _ask(client, tokens, "rtx-4090")
    claim = _claimed(client, setting, gpu="rtx-4090")
    workload = digest_of(parse_manifest(claim["request"]["workload"], "test"))
    h200 = resigned(shipped("rope"), tmp_path / "h200", setting["key"], "runner-a", 0, workload=workload,
                    observed_at=datetime.now(UTC))
    _refused_completion(client, fleet_catalog, setting, claim, _upload(client, setting["token"], h200)["bundle"],
                        "ran on NVIDIA H200, not on the requested rtx-4090")


def test_a_bundle_of_another_workload_or_used_twice_completes_nothing(
        client: TestClient, fleet_catalog: Catalog, setting: dict[str, Any], tokens: dict[str, str],
        tmp_path: Path) -> None:
    claim = _claimed(client, setting)
    request = claim["request"]
    workload = digest_of(parse_manifest(request["workload"], "test"))
    other = next(d for d in _rope_workloads() if d != workload)
    now = datetime.now(UTC) + timedelta(seconds=1)
    elsewhere = resigned(shipped("rope"), tmp_path / "other", setting["key"], "runner-a", 0, workload=other,
                         observed_at=now)
    _refused_completion(client, fleet_catalog, setting, claim, _upload(client, setting["token"], elsewhere)["bundle"],
                        "measured workload")
    right = _upload(client, setting["token"], resigned(shipped("rope"), tmp_path / "right", setting["key"],
                                                       "runner-a", 0, workload=workload, observed_at=now))["bundle"]
    done = _post(client, setting["token"], f"/requests/{request['id']}/replicas/1/complete",
                 {"token": claim["token"], "bundle": right})
    assert done.status_code == 200 and done.json()["replicas"][0]["runner"] == "runner-a", done.text
    _ask(client, tokens, "h200", replicas=2)  # the same workload again: a new request
    second = _claimed(client, setting)
    _refused_completion(client, fleet_catalog, setting, second, right, "already completed request")


def _rope_workloads() -> list[str]:
    return [digest_of(m) for m in verify_directory(shipped("rope")).manifests if m.kind == "WorkloadCase"]


def test_a_runs_runner_name_comes_from_its_key(client: TestClient, fleet_catalog: Catalog,
                                               setting: dict[str, Any], tmp_path: Path) -> None:
    before = catalog_state(fleet_catalog)
    posing = resigned(shipped("rope"), tmp_path / "posing", setting["key"], RUNNER_2, 0)
    answer = client.post("/api/v1/bundles", content=pack_bundle(posing),
                         headers={**bearer(setting["token"]), "content-type": "application/gzip"})
    assert answer.status_code == 422 and answer.json()["code"] == "bundle_invalid", answer.text
    assert "is trusted here as 'runner-a'" in answer.json()["detail"]
    stranger = make_runner(tmp_path, "stranger")
    as_reported = resigned(shipped("rope"), tmp_path / "stranger-posing", stranger, RUNNER_2, 0)
    with pytest.raises(BundleError, match="a runner trusted here under another key"):
        publish_bundle(fleet_catalog, as_reported, allow_untrusted=True)
    assert catalog_state(fleet_catalog) == before
