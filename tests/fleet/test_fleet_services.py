"""The write rules as services, without HTTP (issue 48 item 3): what each command answers, what it refuses
with which Problem, and which audit lines it asks its door to write. The HTTP tests beside this one keep
the routes' side (status codes, headers, who is audited under which key)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fleet_helpers import claim_body, make_runner, shipped

from kernelindex.catalog import audit
from kernelindex.catalog.audit import ANONYMOUS
from kernelindex.catalog.db import Catalog
from kernelindex.services import fleet, reads, writes
from kernelindex.services.audit import audit_log, seconds_to_wait
from kernelindex.services.problems import Problem
from kernelindex.trust.bundles import publish_bundle

AXES = {"seq": 2048, "hidden": 8192, "q_heads": 32, "kv_heads": 8}  # a case of the shipped rope bundle
NOW = datetime(2026, 12, 7, 12, tzinfo=UTC)
Line = tuple[str, str, str | None, dict[str, Any] | None]


class Lines:
    """An Audit that keeps what the service asked to record."""

    def __init__(self) -> None:
        self.lines: list[Line] = []

    def __call__(self, action: str, outcome: str, object_digest: str | None = None,
                 detail: dict[str, Any] | None = None) -> None:
        self.lines.append((action, outcome, object_digest, detail))


@pytest.fixture
def rope(fleet_catalog: Catalog) -> Catalog:
    publish_bundle(fleet_catalog, shipped("rope"))
    return fleet_catalog


def _request(catalog: Catalog, gpu: str = "h200") -> dict[str, Any]:
    asked = writes.ask(catalog, NOW, {"operation": "rope", "axes": AXES, "dtypes": {"T": "bf16"}, "gpu": gpu})
    assert not isinstance(asked, Problem)
    return asked.request


def test_a_claim_leases_a_replica_and_audits_it_and_a_forged_one_is_refused(rope: Catalog, tmp_path: Path) -> None:
    asked, lines = _request(rope), Lines()
    key = make_runner(tmp_path, "runner-a", rope)
    assert fleet.claim(rope, NOW, claim_body(key, "b200"), lease_seconds=30, audit=lines) is None  # nothing there
    held = fleet.claim(rope, NOW, claim_body(key, "h200"), lease_seconds=30, audit=lines)
    assert isinstance(held, dict) and (held["request"]["id"], held["replica"], held["runner"]) == (asked["id"], 1,
                                                                                                   "runner-a")
    assert lines.lines == [("request.claim", "claimed", asked["digest"],
                            {"request": asked["id"], "replica": 1, "runner": "runner-a"})]
    stranger = make_runner(tmp_path, "stranger")  # not trusted here
    refused = fleet.claim(rope, NOW, claim_body(stranger, "h200"), lease_seconds=30, audit=lines)
    assert isinstance(refused, Problem) and refused.code == "untrusted_runner"
    assert lines.lines[-1][:2] == ("request.claim", "refused: untrusted_runner")


def test_a_lost_lease_is_a_conflict_and_no_audit_line(rope: Catalog, tmp_path: Path) -> None:
    _request(rope)
    lines = Lines()
    held = fleet.claim(rope, NOW, claim_body(make_runner(tmp_path, "runner-a", rope), "h200"), lease_seconds=30,
                       audit=lines)
    assert isinstance(held, dict)
    renewed = fleet.heartbeat(rope, held["request"]["id"], 1, held["token"], lease_seconds=30)
    assert isinstance(renewed, dict) and renewed["lease_seconds"] == 30
    lost = fleet.heartbeat(rope, held["request"]["id"], 1, "x" * 43, lease_seconds=30)
    assert isinstance(lost, Problem) and (lost.code, lost.status) == ("lease_lost", 409)
    done = fleet.complete(rope, NOW, held["request"]["id"], 1, {"token": "x" * 43, "failure": "no GPU"}, audit=lines)
    assert isinstance(done, Problem) and done.code == "lease_lost" and len(lines.lines) == 1


def test_a_completion_gives_exactly_one_of_bundle_and_failure(rope: Catalog, tmp_path: Path) -> None:
    _request(rope)
    lines = Lines()
    held = fleet.claim(rope, NOW, claim_body(make_runner(tmp_path, "runner-a", rope), "h200"), lease_seconds=30,
                       audit=lines)
    assert isinstance(held, dict)
    request_id, token = held["request"]["id"], held["token"]
    for body in ({"token": token}, {"token": token, "failure": "x", "bundle": "sha256:" + "0" * 64}):
        both = fleet.complete(rope, NOW, request_id, 1, body, audit=lines)
        assert isinstance(both, Problem) and both.code == "invalid_request" and both.param == "bundle"
    failed = fleet.complete(rope, NOW, request_id, 1, {"token": token, "failure": "does not install"}, audit=lines)
    assert isinstance(failed, dict) and failed["state"] == "failed"
    assert lines.lines[-1][:2] == ("request.complete", "failed")
    assert lines.lines[-1][3] == {"request": request_id, "replica": 1, "failure": "does not install"}


def test_an_api_key_files_at_most_its_limit_in_the_window(rope: Catalog) -> None:
    body = {"operation": "rope", "axes": AXES, "dtypes": {"T": "bf16"}, "gpu": "h200"}
    for _ in range(2):  # the window counts accepted lines of the log, as the door writes them
        audit.record(rope, actor="k", api_key="key-1", action="request.create", outcome="created")
    lines = Lines()
    refused = writes.file_request(rope, NOW, body, key_id="key-1", limit=2, audit=lines)
    assert isinstance(refused, Problem) and refused.status == 429 and 1 <= int(refused.headers["retry-after"]) <= 601
    assert lines.lines == [("request.create", "refused: rate_limited", None, None)]
    filed = writes.file_request(rope, NOW, body, key_id="key-2", limit=2, audit=lines)
    assert isinstance(filed, writes.Asked) and not filed.merged
    assert lines.lines[-1] == ("request.create", "created", filed.request["digest"], {"request": filed.request["id"]})


def test_the_site_form_files_what_its_page_showed_and_limits_each_address(rope: Catalog) -> None:
    workload = reads.ask_form(rope, NOW, {"operation": "rope", "workload": "nope", "gpu": "h200"})
    assert isinstance(workload, Problem) and workload.code == "not_found"
    page = reads.ask_form(rope, NOW, {"operation": "rope", "axes": "seq=2048,hidden=8192,q_heads=32,"
                                                       "kv_heads=8", "dtypes": "T=bf16", "gpu": "h100-sxm"})
    assert not isinstance(page, Problem)
    for at in range(writes.SITE_ASKS):
        audit.record(rope, actor=ANONYMOUS, action="request.create", client="10.0.0.1", outcome="created",
                     at=NOW - timedelta(minutes=9, seconds=at))
    lines = Lines()
    form = {"operation": "rope", "axes": "seq=2048,hidden=8192,q_heads=32,kv_heads=8", "dtypes": "T=bf16",
            "gpu": "h100-sxm", "replicas": "2"}
    limited = writes.ask_on_site(rope, NOW, form, client="10.0.0.1", audit=lines)
    assert isinstance(limited, Problem) and limited.code == "rate_limited" and "try again in 56 seconds" in \
        limited.detail and limited.headers == {"retry-after": "56"}
    asked = writes.ask_on_site(rope, NOW, form, client="10.0.0.2", audit=lines)
    assert isinstance(asked, writes.Asked) and len(asked.request["replicas"]) == 2
    assert lines.lines[-1][1:] == ("created", asked.request["digest"], {"request": asked.request["id"],
                                                                       "via": "site form"})


def test_the_audit_log_pages_by_the_last_id_seen(fleet_catalog: Catalog) -> None:
    for n in range(3):
        audit.record(fleet_catalog, actor="k", action=f"a{n}", outcome="ok")
    first = audit_log(fleet_catalog, 0, 2)
    assert [e["action"] for e in first["items"]] == ["a0", "a1"]
    rest = audit_log(fleet_catalog, first["next_after"], 2)
    assert [e["action"] for e in rest["items"]] == ["a2"] and audit_log(fleet_catalog, 99, 2)["next_after"] == 99


def test_a_window_waits_for_its_oldest_counted_time() -> None:
    window = timedelta(minutes=10)
    times = [NOW - timedelta(minutes=m) for m in (9, 5, 1)]
    assert seconds_to_wait(times, 4, window, NOW) == 0.0
    assert seconds_to_wait(times, 3, window, NOW) == 60.0
    assert seconds_to_wait(times, 2, window, NOW) == 300.0
