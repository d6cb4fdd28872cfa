"""/challenges is a kept answer (web/answer_cache.py): kept by the catalog version and by what it shows of
the measurement requests (web/answer_scope.py's live_scope), so a new request, a claim, or a change made
by another process shows on the next request, and a repeated read renders nothing."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from fleet_helpers import LeaseClock, bearer, claim_body, make_runner, shipped
from sqlalchemy import update

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import MeasurementRequestRow
from kernelindex.trust.bundles import publish_bundle
from kernelindex.web.answer_scope import kept_paths

ASK = {"operation": "rope", "axes": {"seq": 2048, "hidden": 8192, "q_heads": 32, "kv_heads": 8},
       "dtypes": {"T": "bf16"}, "gpu": "h200"}


def _listed(client: TestClient) -> str:
    page = client.get("/challenges")
    assert page.status_code == 200
    return re.search(r'<section aria-labelledby="requests">.*?</section>', page.text, re.S).group(0)


def test_challenges_and_its_twin_are_kept_routes(client: TestClient) -> None:
    assert {"/challenges", "/api/v1/challenges"} <= kept_paths(client.app.routes)  # type: ignore[attr-defined]


def test_a_new_request_a_claim_and_another_process_write_show_and_nothing_else_view_data_calls_again(
        app: Any, client: TestClient, fleet_catalog: Catalog, tokens: dict[str, str], view_data_calls: list[str],
        tmp_path: Path) -> None:
    publish_bundle(fleet_catalog, shipped("rope"))
    runner = make_runner(tmp_path, "runner-a", fleet_catalog)
    app.state.clock = lambda: datetime.now(UTC) + timedelta(days=3)  # every age reads "3 days" throughout
    app.state.lease_seconds = 600.0
    assert "No requests yet" in _listed(client)
    assert len(view_data_calls) == 1 and "No requests yet" in _listed(client) and len(view_data_calls) == 1  # kept

    asked = client.post("/api/v1/requests", json=ASK, headers=bearer(tokens["requests:write"]))
    assert asked.status_code == 201
    listed = _listed(client)
    assert ">open<" in listed and ">1<" in listed and "3 days" in listed and len(view_data_calls) == 2
    assert _listed(client) == listed and len(view_data_calls) == 2  # kept while nothing moves

    claimed = client.post("/api/v1/claims", headers=bearer(tokens["bundles:write"]),
                          json=claim_body(runner, "h200"))
    assert claimed.status_code == 200, claimed.text
    listed = _listed(client)
    assert ">claimed<" in listed and "by runner-a" in listed and len(view_data_calls) == 3
    assert _listed(client) == listed and len(view_data_calls) == 3

    with fleet_catalog.engine.begin() as conn:  # as another worker merging a second asker into it
        conn.execute(update(MeasurementRequestRow).values(askers=MeasurementRequestRow.askers + 1,
                                                          updated_at=datetime.now(UTC)))
    listed = _listed(client)
    assert '<td class="num">2</td>' in listed and len(view_data_calls) == 4
    assert _listed(client) == listed and len(view_data_calls) == 4


def test_a_lapsed_lease_shows_as_open_again_with_no_write(app: Any, client: TestClient, fleet_catalog: Catalog,
                                                          tokens: dict[str, str], tmp_path: Path,
                                                          lease_clock: LeaseClock) -> None:
    publish_bundle(fleet_catalog, shipped("rope"))
    runner = make_runner(tmp_path, "runner-a", fleet_catalog)
    app.state.clock = lambda: datetime.now(UTC) + timedelta(days=3)
    app.state.lease_seconds = 2.0
    assert client.post("/api/v1/requests", json=ASK, headers=bearer(tokens["requests:write"])).status_code == 201
    lease_clock.advance(-2.2)  # the runner claims 2.2 s ago, for a 2 s lease
    assert client.post("/api/v1/claims", headers=bearer(tokens["bundles:write"]),
                       json=claim_body(runner, "h200")).status_code == 200
    assert ">claimed<" in _listed(client)
    lease_clock.advance(2.2)  # now: the runner stopped heart-beating; nothing is written, the lease ran out
    assert ">open<" in _listed(client)
