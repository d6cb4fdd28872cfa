"""Measurement requests: validation against the operation spec, merging, leases, completion."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from fleet_helpers import LeaseClock, bearer, claim_body, make_runner, resigned, shipped

from kernelindex.catalog import audit
from kernelindex.catalog.db import Catalog
from kernelindex.domain.manifests import digest_of, parse_manifest
from kernelindex.trust.bundles import publish_bundle
from kernelindex.trust.uploads import pack_bundle
from kernelindex.web.api.write_schemas import MeasurementRequestOut

SHIPPED_AXES = {"seq": 2048, "hidden": 8192, "q_heads": 32, "kv_heads": 8}  # a case of the shipped rope bundle
ROPE = {"operation": "rope", "axes": {"seq": 2048, "hidden": 4096, "q_heads": 32, "kv_heads": 8},
        "dtypes": {"T": "bf16"}, "gpu": "h100-sxm"}


def _ask(client: TestClient, token: str, **changes: object) -> tuple[int, dict]:
    answer = client.post("/api/v1/requests", json={**ROPE, **changes}, headers=bearer(token))
    return answer.status_code, answer.json()


@pytest.mark.parametrize(("axes", "field", "words"), [
    ({"seq": 2048, "hidden": 4096, "q_heads": 30, "kv_heads": 8}, "axes.hidden", "not divisible by q_heads=30"),
    ({"seq": 2048, "hidden": 4096, "q_heads": 32}, "axes.kv_heads", "missing"),
    ({"seq": 0, "hidden": 4096, "q_heads": 32, "kv_heads": 8}, "axes.seq", "positive integer"),
    ({"seq": 2048, "hidden": 4096, "q_heads": 32, "kv_heads": 8, "heads": 2}, "axes.heads", "not a variable axis"),
    ({"seq": 2048, "hidden": 96, "q_heads": 32, "kv_heads": 8}, "axes.head_dim", "must be even"),
])
def test_an_impossible_shape_is_a_422_naming_the_axis(client: TestClient, tokens: dict[str, str], axes: dict,
                                                      field: str, words: str) -> None:
    status, body = _ask(client, tokens["requests:write"], axes=axes)
    assert status == 422 and body["code"] == "invalid_request", body
    assert any(e["field"] == field and words in e["message"] for e in body["errors"]), body["errors"]


def test_unknown_gpu_dtype_and_operation_are_named(client: TestClient, tokens: dict[str, str]) -> None:
    token = tokens["requests:write"]
    assert _ask(client, token, gpu="h900")[1]["errors"][0]["field"] == "gpu"
    assert _ask(client, token, dtypes={"T": "int8"})[1]["errors"][0]["field"] == "dtypes.T"
    status, body = _ask(client, token, operation="no-such-op")
    assert status == 422 and body["errors"][0]["field"] == "operation"


def test_identical_open_requests_merge_and_count_askers(client: TestClient, tokens: dict[str, str]) -> None:
    status, first = _ask(client, tokens["requests:write"])
    assert status == 201 and first["askers"] == 1 and first["state"] == "open"
    status, again = _ask(client, tokens["admin"])
    assert status == 200 and again["id"] == first["id"] and again["askers"] == 2
    status, other = _ask(client, tokens["requests:write"], replicas=2)
    assert status == 201 and other["id"] != first["id"] and len(other["replicas"]) == 2
    listed = client.get("/api/v1/requests").json()["items"]
    assert [r["id"] for r in listed] == [other["id"], first["id"]] and all("age_seconds" in r for r in listed)


def _claim(client: TestClient, token: str, key: Path, gpu: str = "h200") -> dict | None:
    answer = client.post("/api/v1/claims", headers=bearer(token), json=claim_body(key, gpu))
    assert answer.status_code in (200, 204), answer.text
    return answer.json() if answer.status_code == 200 else None


def test_leases_replicas_and_completion(client: TestClient, app: Any, fleet_catalog: Catalog,
                                        tokens: dict[str, str], tmp_path: Path,
                                        lease_clock: LeaseClock) -> None:
    token = tokens["bundles:write"]
    a, b = make_runner(tmp_path, "runner-a", fleet_catalog), make_runner(tmp_path, "runner-b", fleet_catalog)
    stranger = make_runner(tmp_path, "stranger")
    publish_bundle(fleet_catalog, shipped("rope"))  # the request binds to its WorkloadCase
    _ask(client, tokens["requests:write"], gpu="h200", replicas=2, axes=SHIPPED_AXES)
    refused = client.post("/api/v1/claims", headers=bearer(token), json=claim_body(stranger, "h200"))
    assert refused.status_code == 422 and refused.json()["code"] == "untrusted_runner"
    lease_clock.advance(-2.2)  # runner-a claims 2.2 s ago, for the app's 2 s lease
    first = _claim(client, token, a)
    assert first is not None and first["replica"] == 1 and first["runner"] == "runner-a"
    assert _claim(client, token, a) is None  # never a second replica of the same request
    lease_clock.advance(2.2)  # now: runner-a stopped heart-beating, and its lease ran out
    app.state.lease_seconds = 120.0  # from here on no lease should run out on a slow machine
    again = _claim(client, token, b)
    assert again is not None and again["replica"] == 1 and again["request"]["id"] == first["request"]["id"]
    path = f"/api/v1/requests/{first['request']['id']}/replicas/1"
    lost = client.post(f"{path}/heartbeat", json={"token": first["token"]}, headers=bearer(token))
    assert lost.status_code == 409 and lost.json()["code"] == "lease_lost"
    assert client.post(f"{path}/heartbeat", json={"token": again["token"]}, headers=bearer(token)).status_code == 200
    second = _claim(client, token, a)
    assert second is not None and second["replica"] == 2
    unpublished = client.post(f"{path}/complete", headers=bearer(token),
                              json={"token": again["token"], "bundle": "sha256:" + "0" * 64})
    assert unpublished.status_code == 422 and "upload it" in unpublished.json()["detail"]
    workload = digest_of(parse_manifest(first["request"]["workload"], "test"))
    bundle = resigned(shipped("rope"), tmp_path / "bundle-b", b, "runner-b", 0, workload=workload,
                      observed_at=datetime.now(UTC))
    uploaded = client.post("/api/v1/bundles", content=pack_bundle(bundle),
                           headers={**bearer(token), "content-type": "application/gzip"}).json()
    done = client.post(f"{path}/complete", json={"token": again["token"], "bundle": uploaded["bundle"]},
                       headers=bearer(token))
    assert done.status_code == 200 and done.json()["state"] == "claimed", done.text  # replica 2 is still held
    failed = client.post(f"/api/v1/requests/{first['request']['id']}/replicas/2/complete", headers=bearer(token),
                         json={"token": second["token"], "failure": "liger-kernel does not install: no wheel"})
    assert failed.json()["state"] == "failed"
    assert [r["state"] for r in failed.json()["replicas"]] == ["done", "failed"]
    assert "no wheel" in failed.json()["replicas"][1]["failure"]
    MeasurementRequestOut.model_validate(failed.json())  # as the OpenAPI document says (replicas: their own schema)
    actions = [(e.action, e.outcome) for e in audit.entries(fleet_catalog)]
    assert actions.count(("request.claim", "claimed")) == 3
    assert ("request.claim", "refused: untrusted_runner") in actions
    assert [a for a in actions if a[0] == "request.complete"] == [("request.complete", "done"),
                                                                  ("request.complete", "failed")]
    changes = client.get("/api/v1/changes").json()["changes"]
    assert [c["kind"] for c in changes if c["kind"] == "request_completed"] == ["request_completed"] * 2
