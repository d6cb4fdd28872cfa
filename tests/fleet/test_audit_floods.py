"""Issue 51, item 4: floods of refused writes add O(1) audit rows per client (or key) and minute.

The attacks: one client sent the site's ask form past its rate (1,396 audit rows in 10 s); refused
authenticated requests wrote a row each (~350 a second). Scaled down: 60 refused asks from one address
and 60 refused uploads of one API key (wrong scope) each add one aggregate entry whose count is the
number of refusals, and every refusal is still answered (429, 403)."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from fleet_helpers import bearer, shipped

from kernelindex.catalog import audit
from kernelindex.catalog.db import Catalog
from kernelindex.trust.bundles import publish_bundle

FLOOD = 60


@pytest.fixture
def rope_catalog(fleet_catalog: Catalog) -> Catalog:
    publish_bundle(fleet_catalog, shipped("rope"))  # H100 is not measured: the form offers to ask
    return fleet_catalog


def _form(client: TestClient) -> dict[str, str]:
    page = client.get("/operations/rope").text
    ask = re.findall(r'href="(/requests/new[^"]+)"', page)[0].replace("&amp;", "&")
    return dict(re.findall(r'name="(csrf|operation|workload|gpu)" value="([^"]+)"', client.get(ask).text))


def _refusals(catalog: Catalog, action: str) -> list[audit.AuditEntry]:
    return [e for e in audit.entries(catalog, limit=10_000, action=action) if e.outcome.startswith("refused")]


def test_an_ask_form_flood_adds_one_audit_entry(client: TestClient, rope_catalog: Catalog) -> None:
    fields = _form(client)
    statuses = [client.post("/requests", data=fields, follow_redirects=False).status_code
                for _ in range(5 + FLOOD)]
    assert statuses[:5] == [303] * 5 and statuses[5:] == [429] * FLOOD
    refused = _refusals(rope_catalog, "request.create")
    assert len(refused) == 1, [e.to_json() for e in refused]
    assert refused[0].outcome == "refused: rate_limited"
    assert refused[0].to_json()["detail"]["refusals"] >= 1  # brought up to date at most every 5 s


def test_a_flood_of_refused_authenticated_requests_adds_one_audit_entry(
        client: TestClient, fleet_catalog: Catalog, tokens: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelindex.web.api import failed_auth

    monkeypatch.setattr(failed_auth, "FLUSH_SECONDS", 0.0)  # every refusal brings the one entry up to date
    answers = [client.post("/api/v1/bundles", content=b"x", headers={
        **bearer(tokens["requests:write"]), "content-type": "application/gzip"}).status_code for _ in range(FLOOD)]
    assert answers == [403] * FLOOD
    refused = _refusals(fleet_catalog, "bundle.upload")
    assert len(refused) == 1
    entry = refused[0].to_json()
    assert entry["outcome"] == "refused: insufficient scope" and entry["detail"]["refusals"] == FLOOD
