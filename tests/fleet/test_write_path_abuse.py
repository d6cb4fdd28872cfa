"""Abuse of the write path that wrote too much or trusted too much (issue 23, items 9 and 12): bogus
tokens flooding the audit log, concurrent identical uploads each claiming to publish, X-Forwarded-For
from anyone, one key filing thousands of requests, duplicate JSON keys, a feed built from Host."""

from __future__ import annotations

import re
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from fleet_helpers import bearer, catalog_state, free_port, make_runner, resigned, shipped
from sqlalchemy import func, select

from kernelindex.catalog import audit
from kernelindex.catalog import requests as stored
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import AuditRow, PublicationRow
from kernelindex.cli.serve_cmd import proxy_settings
from kernelindex.trust.bundles import publish_bundle
from kernelindex.trust.uploads import pack_bundle
from kernelindex.web.app import create_app

ROPE = {"operation": "rope", "axes": {"seq": 2048, "hidden": 4096, "q_heads": 32, "kv_heads": 8},
        "dtypes": {"T": "bf16"}, "gpu": "h100-sxm"}
ATOM = "{http://www.w3.org/2005/Atom}"


def _audit_rows(catalog: Catalog) -> int:
    with catalog.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(AuditRow)).scalar_one())


def test_a_thousand_bogus_tokens_add_one_audit_entry(client: TestClient, fleet_catalog: Catalog) -> None:
    before, rows = catalog_state(fleet_catalog), _audit_rows(fleet_catalog)
    started = time.monotonic()
    for n in range(1000):
        answer = client.post("/api/v1/requests", json=ROPE, headers=bearer(f"ki_{n:012x}_{'x' * 43}"))
        assert answer.status_code == 401
    added = [e for e in audit.entries(fleet_catalog, after=0, limit=1000) if e.action == "auth.failed"]
    # one entry per source and minute: two if the loop crossed a minute boundary
    assert _audit_rows(fleet_catalog) - rows == len(added) <= 1 + int(time.monotonic() - started) // 60 + 1
    assert added[0].client == "testclient" and added[0].outcome == "refused: unauthorized"
    assert 1 <= sum(e.detail["failures"] for e in added) <= 1000 and "request.create" in added[0].detail["last_reason"]
    assert catalog_state(fleet_catalog) == before


def test_four_concurrent_identical_uploads_publish_once(live_server: str, fleet_catalog: Catalog,
                                                        tokens: dict[str, str], tmp_path: Any) -> None:
    key = make_runner(tmp_path, "lab-runner", fleet_catalog)
    data = pack_bundle(resigned(shipped("rope"), tmp_path / "bundle", key, "lab-runner", 0))
    gate = threading.Barrier(4)

    def upload(_: int) -> httpx.Response:
        with httpx.Client(timeout=120) as http:
            gate.wait()
            return http.post(f"{live_server}/api/v1/bundles", content=data,
                             headers={**bearer(tokens["bundles:write"]), "content-type": "application/gzip"})

    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(upload, range(4)))
    assert sorted(a.status_code for a in answers) == [200, 200, 200, 201], [a.text for a in answers]
    assert sorted(a.json()["status"] for a in answers) == ["already_published"] * 3 + ["published"]
    digest = answers[0].json()["bundle"]
    with fleet_catalog.engine.connect() as conn:
        publications = conn.execute(select(func.count()).select_from(PublicationRow)
                                    .where(PublicationRow.snapshot_digest == digest)).scalar_one()
    assert publications == 1
    outcomes = sorted(e.outcome for e in audit.entries(fleet_catalog, limit=1000) if e.action == "bundle.upload")
    assert outcomes == ["published", "replayed", "replayed", "replayed"]


def test_one_key_may_file_only_so_many_requests(client: TestClient, app: Any, fleet_catalog: Catalog,
                                                tokens: dict[str, str]) -> None:
    app.state.requests_per_key = 3
    token = tokens["requests:write"]
    for seq in (1024, 2048, 4096):
        answer = client.post("/api/v1/requests", json={**ROPE, "axes": {**ROPE["axes"], "seq": seq}},
                             headers=bearer(token))
        assert answer.status_code == 201, answer.text
    before = len(stored.list_requests(fleet_catalog))
    refused = client.post("/api/v1/requests", json={**ROPE, "axes": {**ROPE["axes"], "seq": 8192}},
                          headers=bearer(token))
    assert refused.status_code == 429 and refused.json()["code"] == "rate_limited"
    assert 1 <= int(refused.headers["retry-after"]) <= 601 and "filed 3 requests" in refused.json()["detail"]
    assert len(stored.list_requests(fleet_catalog)) == before
    other = client.post("/api/v1/requests", json={**ROPE, "axes": {**ROPE["axes"], "seq": 8192}},
                        headers=bearer(tokens["admin"]))  # another key is not held back
    assert other.status_code == 201


@pytest.mark.parametrize("body", [
    '{"operation": "rope", "operation": "softmax", "axes": {}, "gpu": "h100-sxm"}',
    '{"operation": "rope", "axes": {"seq": 2048, "seq": 1, "hidden": 4096, "q_heads": 32, "kv_heads": 8}, '
    '"dtypes": {"T": "bf16"}, "gpu": "h100-sxm"}',
])
def test_duplicate_json_keys_are_refused_naming_the_key(client: TestClient, fleet_catalog: Catalog,
                                                        tokens: dict[str, str], body: str) -> None:
    before = catalog_state(fleet_catalog)
    answer = client.post("/api/v1/requests", content=body, headers={**bearer(tokens["requests:write"]),
                                                                     "content-type": "application/json"})
    key = "operation" if '"operation": "softmax"' in body else "seq"
    assert answer.status_code == 400 and answer.json()["code"] == "invalid_json", answer.text
    assert f"the key '{key}' twice" in answer.json()["detail"] and answer.json()["errors"][0]["field"] == key
    assert stored.list_requests(fleet_catalog) == [] and catalog_state(fleet_catalog) == before


def test_the_feed_never_takes_its_links_from_host(fleet_catalog: Catalog) -> None:
    publish_bundle(fleet_catalog, shipped("rope"))
    plain = TestClient(create_app(fleet_catalog))
    feed = plain.get("/feed.atom", headers={"host": "evil.example"})
    assert feed.status_code == 200 and b"evil.example" not in feed.content
    hrefs = [link.get("href") for link in ET.fromstring(feed.content).iter(f"{ATOM}link")]
    assert hrefs and all(h.startswith("/") for h in hrefs), hrefs  # relative without a configured base URL
    configured = create_app(fleet_catalog)
    configured.state.base_url = "https://kernelindex.example/"
    feed = TestClient(configured).get("/feed.atom", headers={"host": "evil.example"})
    hrefs = [link.get("href") for link in ET.fromstring(feed.content).iter(f"{ATOM}link")]
    assert all(h.startswith("https://kernelindex.example/") for h in hrefs) and b"evil.example" not in feed.content


def _served(app: Any, trusted_proxies: str) -> Iterator[str]:
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           **proxy_settings(trusted_proxies)))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _ask(http: httpx.Client, base: str, forwarded: str) -> int:
    page = http.get(f"{base}/operations/rope").text
    form_url = re.findall(r'href="(/requests/new[^"]+)"', page)[0].replace("&amp;", "&")
    form = http.get(f"{base}{form_url}").text
    fields = dict(re.findall(r'name="(csrf|operation|workload|gpu)" value="([^"]+)"', form))
    return http.post(f"{base}/requests", data=fields, headers={"x-forwarded-for": forwarded},
                     follow_redirects=False).status_code


@pytest.mark.parametrize(("trusted", "sixth"), [("", 429), ("127.0.0.1", 303)])
def test_x_forwarded_for_is_believed_only_from_configured_proxies(fleet_catalog: Catalog, trusted: str,
                                                                  sixth: int) -> None:
    publish_bundle(fleet_catalog, shipped("rope"))
    for base in _served(create_app(fleet_catalog), trusted):
        with httpx.Client(timeout=30) as http:
            answers = [_ask(http, base, f"203.0.113.{n}") for n in range(6)]  # a new forged address each time
    assert answers == [303] * 5 + [sixth]
    clients = {e.client for e in audit.entries(fleet_catalog, limit=100) if e.action == "request.create"}
    assert clients == ({"127.0.0.1"} if not trusted else {f"203.0.113.{n}" for n in range(6)})
