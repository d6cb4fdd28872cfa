"""API keys, scopes, the audit log and bundle uploads over a real HTTP server.

Each refusal has its expected answer and leaves the catalog unchanged; each acceptance loses nothing;
a replay answers 200 with the same body and writes only an audit line."""

from __future__ import annotations

import io
import json
import shutil
import tarfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from fleet_helpers import bearer, make_runner, resigned, shipped
from typer.testing import CliRunner

from kernelindex.catalog import audit
from kernelindex.catalog.db import Catalog
from kernelindex.cli import app as ki
from kernelindex.trust.api_keys import ApiKeyError, authenticate, create_key, revoke_key
from kernelindex.trust.uploads import MAX_ARCHIVE_BYTES, pack_bundle
from kernelindex.web.api.write_schemas import AuditOut

GZIP = {"content-type": "application/gzip"}


def _runs(catalog: Catalog) -> int:
    from sqlalchemy import func, select

    from kernelindex.catalog.models import RunRow

    with catalog.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(RunRow)).scalar_one())


def _upload(client: TestClient | httpx.Client, token: str, data: bytes, base: str = "") -> httpx.Response:
    return client.post(f"{base}/api/v1/bundles", content=data, headers={**bearer(token), **GZIP})


def test_key_is_shown_once_stored_hashed_and_revocable(fleet_catalog: Catalog) -> None:
    key, token = create_key(fleet_catalog, name="lab", scope="requests:write", created_by="pytest")
    assert authenticate(fleet_catalog, token).key_id == key.key_id
    from sqlalchemy import select

    from kernelindex.catalog.models import ApiKeyRow

    with fleet_catalog.engine.connect() as conn:
        stored = conn.execute(select(ApiKeyRow)).one()
    assert token.split("_")[-1] not in {stored.secret_hash, stored.salt}
    with pytest.raises(ApiKeyError, match="not known"):
        authenticate(fleet_catalog, token[:-1] + ("A" if token[-1] != "A" else "B"))
    revoke_key(fleet_catalog, key.key_id, revoked_by="pytest")
    with pytest.raises(ApiKeyError, match="revoked"):
        authenticate(fleet_catalog, token)


def test_keys_cli_create_list_revoke_and_audit(fleet_catalog: Catalog) -> None:
    runner, url = CliRunner(), fleet_catalog.url
    made = runner.invoke(ki, ["keys", "create", "--name", "ops", "--scope", "admin", "--database", url, "--json"])
    assert made.exit_code == 0, made.output
    created = json.loads(made.output)
    assert created["token"].startswith("ki_")
    listed = json.loads(runner.invoke(ki, ["keys", "list", "--database", url, "--json"]).output)
    assert [k["name"] for k in listed] == ["ops"] and "token" not in listed[0]
    assert runner.invoke(ki, ["keys", "create", "--name", "x", "--scope", "root", "--database", url]).exit_code == 2
    assert runner.invoke(ki, ["keys", "revoke", created["key_id"], "--database", url]).exit_code == 0
    assert json.loads(runner.invoke(ki, ["keys", "list", "--database", url, "--json"]).output)[0]["revoked"]
    audit.record(fleet_catalog, actor="ops", action="bundle.upload", outcome="published", client="10.0.0.1")
    shown = runner.invoke(ki, ["audit", "--database", url, "--json"])
    assert json.loads(shown.output)[0]["client"] == "10.0.0.1"


def test_every_write_route_needs_its_scope(client: TestClient, tokens: dict[str, str]) -> None:
    writes = [("/api/v1/bundles", "bundles:write", {"content": b"x", "headers": GZIP}),
              ("/api/v1/requests", "requests:write", {"json": {}}),
              ("/api/v1/claims", "bundles:write", {"json": {}}),
              ("/api/v1/requests/1/replicas/1/heartbeat", "bundles:write", {"json": {"token": "0" * 32}}),
              ("/api/v1/requests/1/replicas/1/complete", "bundles:write", {"json": {"token": "0" * 32}})]
    for path, scope, kwargs in writes:
        headers = kwargs.pop("headers", {})
        assert client.post(path, headers=headers, **kwargs).status_code == 401, path
        wrong = next(s for s in ("bundles:write", "requests:write") if s != scope)
        refused = client.post(path, headers={**headers, **bearer(tokens[wrong])}, **kwargs)
        assert refused.status_code == 403 and refused.json()["code"] == "insufficient_scope", path
        assert scope in refused.json()["detail"]
    assert client.get("/api/v1/audit").status_code == 401
    assert client.get("/api/v1/audit", headers=bearer(tokens["bundles:write"])).status_code == 403
    answer = client.get("/api/v1/audit", headers=bearer(tokens["admin"])).json()
    AuditOut.model_validate(answer)  # the answer is what the OpenAPI document says (entries are their own schema)
    entries = answer["items"]
    assert {e["outcome"] for e in entries} == {"refused: insufficient scope"}
    assert all(e["client"] for e in entries)


def test_upload_publishes_then_a_replay_writes_only_an_audit_line(
        client: TestClient, fleet_catalog: Catalog, tokens: dict[str, str]) -> None:
    data = pack_bundle(shipped("rope"))
    first = _upload(client, tokens["bundles:write"], data)
    assert first.status_code == 201, first.text
    assert len(first.json()["runs"]) == 21 and _runs(fleet_catalog) == 21
    version, audited = fleet_catalog.version(), len(audit.entries(fleet_catalog))
    again = _upload(client, tokens["admin"], data)
    assert again.status_code == 200 and again.json() == {**first.json(), "status": "already_published"}
    assert fleet_catalog.version() == version  # the audit line is not catalog data
    lines = audit.entries(fleet_catalog)
    assert len(lines) == audited + 1 and lines[-1].outcome == "replayed"
    assert lines[-1].object_digest == first.json()["bundle"]


def test_refused_uploads_name_what_failed_and_change_nothing(
        client: TestClient, fleet_catalog: Catalog, tokens: dict[str, str], tmp_path: Path) -> None:
    token = tokens["bundles:write"]
    source = tmp_path / "tampered"
    shutil.copytree(shipped("embedding"), source)
    manifests = source / "manifests.jsonl"
    manifests.write_bytes(manifests.read_bytes().replace(b'"median_ns":', b'"median_ns": ', 1))
    stranger = resigned(shipped("rope"), tmp_path / "stranger-bundle", make_runner(tmp_path, "stranger"), "stranger", 0)
    link = io.BytesIO()
    with tarfile.open(fileobj=link, mode="w:gz") as tar:
        entry = tarfile.TarInfo("bundle.json")
        entry.type, entry.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(entry)
    cases = [
        (pack_bundle(source), 422, "bundle_invalid", "manifests.jsonl"),
        (pack_bundle(stranger), 422, "untrusted_runner", "stranger"),
        (b"not an archive", 422, "archive_invalid", "not a tar"),
        (link.getvalue(), 422, "archive_invalid", "bundle.json"),
        (b"\0" * (MAX_ARCHIVE_BYTES + 1), 413, "payload_too_large", f"{MAX_ARCHIVE_BYTES:,}"),
    ]
    for data, status, code, named in cases:
        answer = _upload(client, token, data)
        assert (answer.status_code, answer.json()["code"]) == (status, code), answer.text
        assert named in answer.json()["detail"]
        assert answer.headers["content-type"] == "application/problem+json"
    assert _runs(fleet_catalog) == 0 and fleet_catalog.version() == 1
    revoked_key, revoked = create_key(fleet_catalog, name="old", scope="bundles:write", created_by="pytest")
    revoke_key(fleet_catalog, revoked_key.key_id, revoked_by="pytest")
    answer = _upload(client, revoked, pack_bundle(shipped("rope")))
    assert answer.status_code == 401 and "revoked" in answer.json()["detail"]
    assert _runs(fleet_catalog) == 0


def test_twenty_concurrent_uploads_lose_nothing(
        live_server: str, fleet_catalog: Catalog, tokens: dict[str, str], tmp_path: Path) -> None:
    key = make_runner(tmp_path, "lab-runner", fleet_catalog)
    archives = [pack_bundle(resigned(shipped("rope"), tmp_path / f"b{i}", key, "lab-runner", i)) for i in range(20)]
    with httpx.Client(timeout=120) as http, ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(lambda data: _upload(http, tokens["bundles:write"], data, live_server), archives))
    assert [a.status_code for a in answers] == [201] * 20, [a.text for a in answers if a.status_code != 201]
    assert _runs(fleet_catalog) == 20 * 21
    assert len({run for a in answers for run in a.json()["runs"]}) == 20 * 21
