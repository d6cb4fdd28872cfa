"""The site's "Ask for this measurement" form (CSRF, rate limit, anonymous audit), /challenges'
request list, and the changes feed (/api/v1/changes cursor, /feed.atom)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from fleet_helpers import shipped

from kernelindex.catalog import audit
from kernelindex.catalog import requests as stored
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.lifecycle import retract
from kernelindex.trust.bundles import publish_bundle
from kernelindex.web.app import create_app

ATOM = "{http://www.w3.org/2005/Atom}"


@pytest.fixture
def rope_catalog(fleet_catalog: Catalog) -> Catalog:
    publish_bundle(fleet_catalog, shipped("rope"))  # real H200 runs: H100 and B200 are not measured
    return fleet_catalog


def _form(client: TestClient) -> dict[str, str]:
    page = client.get("/operations/rope").text
    asks = re.findall(r'href="(/requests/new[^"]+)"', page)
    assert len(asks) == 2 and "gpu=h100-sxm" in asks[0]
    form = client.get(asks[0].replace("&amp;", "&"))
    assert form.status_code == 200 and form.headers["cache-control"] == "no-store"
    assert "Ask for this measurement" in form.text and "NVIDIA H100" in form.text
    fields = dict(re.findall(r'name="(csrf|operation|workload|gpu)" value="([^"]+)"', form.text))
    assert fields["csrf"] == client.cookies.get("ki_csrf")
    return fields


def test_anyone_can_ask_and_identical_asks_merge(client: TestClient, rope_catalog: Catalog) -> None:
    fields = _form(client)
    sent = client.post("/requests", data={**fields, "replicas": "2"}, follow_redirects=False)
    assert sent.status_code == 303 and sent.headers["location"].startswith("/challenges?asked=1")
    (request,) = stored.list_requests(rope_catalog)
    assert (request.operation, request.gpu, len(request.replicas), request.askers) == ("rope", "h100-sxm", 2, 1)
    again = client.post("/requests", data={**_form(client), "replicas": "2"}, follow_redirects=False)
    assert again.status_code == 303 and stored.get(rope_catalog, 1).askers == 2
    entries = [e for e in audit.entries(rope_catalog) if e.action == "request.create"]
    assert [(e.actor, e.outcome, e.client) for e in entries] == [("anonymous", "created", "testclient"),
                                                                  ("anonymous", "merged", "testclient")]
    page = client.get("/challenges?asked=1").text
    assert "Request 1 recorded" in page and "askers" in page.lower()
    listed = re.search(r'<section aria-labelledby="requests">.*?</section>', page, re.S).group(0)
    assert "rope" in listed and "h100-sxm" in listed and ">open<" in listed and " s<" in listed


def test_forms_without_the_token_or_from_elsewhere_are_refused(client: TestClient, rope_catalog: Catalog) -> None:
    fields = _form(client)
    assert client.post("/requests", data={**fields, "csrf": "forged"}).status_code == 403
    foreign = client.post("/requests", data=fields, headers={"origin": "https://evil.example"})
    assert foreign.status_code == 403 and "another site" in foreign.text
    client.cookies.clear()
    assert client.post("/requests", data=fields).status_code == 403
    assert stored.list_requests(rope_catalog) == []


def test_each_client_may_ask_five_times_in_ten_minutes(client: TestClient, rope_catalog: Catalog) -> None:
    fields = _form(client)
    for _ in range(5):
        assert client.post("/requests", data=fields, follow_redirects=False).status_code == 303
    limited = client.post("/requests", data=fields, follow_redirects=False)
    assert limited.status_code == 429 and "try again in" in limited.text
    assert stored.get(rope_catalog, 1).askers == 5
    assert audit.entries(rope_catalog)[-1].outcome == "refused: rate_limited"
    assert 1 <= int(limited.headers["retry-after"]) <= 600


def test_the_ask_limit_holds_across_server_processes_and_slides(rope_catalog: Catalog) -> None:
    clock = [datetime(2030, 1, 1, 12, 0, tzinfo=UTC)]
    workers = [TestClient(create_app(rope_catalog, clock=lambda: clock[0])) for _ in range(2)]
    for i in range(5):  # alternate between two apps, as two `ki serve` workers share one catalog
        worker = workers[i % 2]
        clock[0] += timedelta(minutes=1)
        assert worker.post("/requests", data=_form(worker), follow_redirects=False).status_code == 303
    clock[0] += timedelta(minutes=1)
    refused = workers[1].post("/requests", data=_form(workers[1]), follow_redirects=False)
    assert refused.status_code == 429 and refused.headers["retry-after"] == "300"
    assert "try again in 5 minutes" in refused.text  # the first ask (12:01) leaves the window at 12:11
    clock[0] += timedelta(minutes=4, seconds=59)
    assert workers[0].post("/requests", data=_form(workers[0]), follow_redirects=False).status_code == 429
    clock[0] += timedelta(seconds=1)
    assert workers[0].post("/requests", data=_form(workers[0]), follow_redirects=False).status_code == 303


def test_changes_follow_a_cursor_and_the_atom_feed_lists_them(client: TestClient, rope_catalog: Catalog) -> None:
    first = client.get("/api/v1/changes").json()
    kinds = {c["kind"] for c in first["changes"]}
    assert {"publication", "record"} <= kinds and first["next_cursor"] and not first["more"]
    assert client.get("/api/v1/changes", params={"since": first["next_cursor"]}).json()["changes"] == []
    run = client.get("/api/v1/operations/rope").json()["ranked"][0]["run_id"]
    retract(rope_catalog, run, reason="wrong clocks", actor="pytest")
    after = client.get("/api/v1/changes", params={"since": first["next_cursor"]}).json()["changes"]
    assert "retraction" in {c["kind"] for c in after} and all(c["at"] >= first["changes"][-1]["at"] for c in after)
    paged = client.get("/api/v1/changes", params={"limit": 2}).json()
    assert len(paged["changes"]) == 2 and paged["more"]
    bad = client.get("/api/v1/changes", params={"since": "garbage!"})
    assert bad.status_code == 400 and bad.json()["code"] == "bad_cursor"
    feed = client.get("/feed.atom")
    assert feed.headers["content-type"].startswith("application/atom+xml")
    entries = ET.fromstring(feed.content).findall(f"{ATOM}entry")
    titles = [e.find(f"{ATOM}title").text for e in entries]
    assert any(t.startswith(f"Run {run} retracted") for t in titles[:3])  # newest first


def test_the_atom_feed_is_rendered_once_per_catalog_version(client: TestClient, rope_catalog: Catalog,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import kernelindex.services.reads as reads_module

    reads: list[int] = []
    real = reads_module.feed
    monkeypatch.setattr(reads_module, "feed", lambda *a, **kw: reads.append(1) or real(*a, **kw))
    first, again = client.get("/feed.atom"), client.get("/feed.atom")
    assert first.status_code == again.status_code == 200 and first.content == again.content and len(reads) == 1
    assert client.get("/feed.atom", headers={"if-none-match": again.headers["etag"]}).status_code == 304
    run = client.get("/api/v1/operations/rope").json()["ranked"][0]["run_id"]
    retract(rope_catalog, run, reason="wrong clocks", actor="pytest")
    entries = ET.fromstring(client.get("/feed.atom").content).findall(f"{ATOM}entry")
    titles = [e.find(f"{ATOM}title").text for e in entries]
    assert any(t.startswith(f"Run {run} retracted") for t in titles[:3]) and len(reads) == 2


def test_challenges_page_is_rendered_once_and_shows_a_new_request_at_once(
        client: TestClient, rope_catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    import kernelindex.web.challenges_page as challenges_page

    renders: list[str] = []
    real_render = challenges_page.render
    monkeypatch.setattr(challenges_page, "render",
                        lambda template, **kw: renders.append(template) or real_render(template, **kw))
    first, again = client.get("/challenges"), client.get("/challenges")
    assert renders == ["challenges.html"]  # the ~1 MB page is rendered once, not per request
    assert first.status_code == again.status_code == 200 and first.content == again.content
    assert first.headers["cache-control"] == "no-cache" and ">open<" not in first.text
    assert client.post("/requests", data=_form(client), follow_redirects=False).status_code == 303
    listed = re.search(r'<section aria-labelledby="requests">.*?</section>', client.get("/challenges").text, re.S)
    assert listed is not None and "h100-sxm" in listed.group(0) and ">open<" in listed.group(0)
    assert renders.count("challenges.html") == 2


def test_every_page_of_challenges_shows_a_new_request_at_once(
        client: TestClient, rope_catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    import kernelindex.readmodel.pages_challenges as challenges

    monkeypatch.setattr(challenges, "PER_PAGE", 2)  # the rope bundle alone makes a few rows: page them by two
    pages = client.get("/api/v1/challenges").json()["paging"]["pages"]
    assert pages >= 2
    before = {n: client.get("/challenges", params={"page": n}).text for n in (1, 2)}  # both pages now kept
    assert all(">open<" not in text for text in before.values()) and before[1] != before[2]
    assert client.post("/requests", data=_form(client), follow_redirects=False).status_code == 303
    for n in (1, 2):
        page = client.get("/challenges", params={"page": n}).text
        listed = re.search(r'<section aria-labelledby="requests">.*?</section>', page, re.S)
        assert listed is not None and "h100-sxm" in listed.group(0) and ">open<" in listed.group(0)
        assert f"Page {n} of {pages}" in page
