"""Readers survive any stored value (issue 23, item 7): a catalog whose stored run manifests and typed
columns hold a zero, negative, non-numeric or absurd median (written there directly, as an old or
damaged catalog could hold them) still answers every page, JSON twin and CLI command; such a run
is shown as invalid with its reason, never ranked and never counted eligible."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update
from typer.testing import CliRunner
from web_helpers import FIXED_NOW, make_app

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import CatalogStateRow, RunRow
from kernelindex.cli import app as ki
from kernelindex.readmodel.operations import operation_page

# (stored manifest value, typed column value): what an old or damaged catalog may hold
BAD_MEDIANS: dict[str, tuple[Any, int | None]] = {
    "zero": (0, 0),
    "negative": (-58880, -58880),
    "not-a-number": ("NaN", None),
    "absurd": (10**30, 9_000_000_000_000_000_000),
    "float": (1e400, 1),
}
SITE = ["/", "/records", "/challenges", "/gpus", "/search?q=rope", "/search?q=rope+a100", "/operations/rope",
        "/implementations/liger-kernel-rope"]
API = ["/api/v1/home", "/api/v1/records", "/api/v1/challenges", "/api/v1/operations", "/api/v1/operations/rope",
       "/api/v1/search?q=rope", "/api/v1/implementations/liger-kernel-rope", "/api/v1/gpus"]


def _store(catalog: Catalog, run_ids: list[str], manifest_value: Any, column_value: int | None) -> None:
    """Write the value into the stored manifest body (raw text: JSON cannot hold some of them) and
    into the typed column, then bump the catalog version as a write does."""
    with catalog.engine.begin() as conn:
        rows = conn.execute(select(RunRow.run_id, RunRow.body).where(RunRow.run_id.in_(run_ids))).all()
        for run_id, body in rows:
            data = json.loads(body)
            data["spec"]["timing"]["median_ns"] = "__VALUE__"
            raw = json.dumps(data).replace('"__VALUE__"', _raw_json(manifest_value))
            conn.execute(update(RunRow).where(RunRow.run_id == run_id).values(body=raw, median_ns=column_value))
        conn.execute(update(CatalogStateRow).values(version=CatalogStateRow.version + 1))


def _raw_json(value: Any) -> str:
    if isinstance(value, float):
        return "1e400"  # overflows a double: what a hand-edited or foreign catalog could hold
    return json.dumps(value)


def _leaders(catalog: Catalog) -> list[str]:
    return [row.run_id for row in operation_page(catalog, "rope", now=FIXED_NOW).ranked[:2]]


@pytest.mark.parametrize("bad", sorted(BAD_MEDIANS))
def test_any_stored_median_takes_no_page_down(liger_catalog: Catalog, bad: str) -> None:
    leaders = _leaders(liger_catalog)
    _store(liger_catalog, leaders, *BAD_MEDIANS[bad])
    with TestClient(make_app(liger_catalog)) as client:
        pair = f"run={leaders[0]}&run={leaders[1]}"
        for path in [*SITE, *API, *(f"/runs/{r}" for r in leaders), *(f"/api/v1/runs/{r}" for r in leaders),
                     f"/compare?{pair}", f"/api/v1/compare?{pair}"]:
            response = client.get(path)
            assert response.status_code == 200, (bad, path, response.text[:400])
        page = client.get("/api/v1/operations/rope").json()
        dossier = client.get(f"/api/v1/runs/{leaders[0]}").json()
        html = client.get(f"/runs/{leaders[0]}").text
    assert not {row["run_id"] for row in page["ranked"]} & set(leaders), bad  # never ranked
    reasons = {reason["code"]: reason["sentence"] for reason in dossier["not_ranked_reasons"]}
    assert "INVALID_STORED_VALUE" in reasons, (bad, dossier["not_ranked_reasons"])
    assert "median" in reasons["INVALID_STORED_VALUE"]
    assert "Not ranked" in html and "median" in html


def test_an_invalid_stored_run_is_never_counted_eligible(liger_catalog: Catalog) -> None:
    before = {op["slug"]: op["eligible_runs"] for op in _index(liger_catalog)}
    leaders = _leaders(liger_catalog)
    _store(liger_catalog, leaders, 0, 58880)  # the column still positive: the manifest decides too
    after = {op["slug"]: op["eligible_runs"] for op in _index(liger_catalog)}
    assert after["rope"] == before["rope"] - 2
    assert {k: v for k, v in after.items() if k != "rope"} == {k: v for k, v in before.items() if k != "rope"}


def test_a_column_that_disagrees_with_its_manifest_is_invalid(liger_catalog: Catalog) -> None:
    leaders = _leaders(liger_catalog)
    with liger_catalog.engine.begin() as conn:
        conn.execute(update(RunRow).where(RunRow.run_id == leaders[0]).values(median_ns=1))
        conn.execute(update(CatalogStateRow).values(version=CatalogStateRow.version + 1))
    with TestClient(make_app(liger_catalog)) as client:
        page = client.get("/api/v1/operations/rope").json()
        dossier = client.get(f"/api/v1/runs/{leaders[0]}").json()
    assert leaders[0] not in {row["run_id"] for row in page["ranked"]}
    assert any(r["code"] == "INVALID_STORED_VALUE" and "1 ns" in r["sentence"] for r in dossier["not_ranked_reasons"])


def _index(catalog: Catalog) -> list[dict]:
    with TestClient(make_app(catalog)) as client:
        return client.get("/api/v1/operations").json()["items"]


@pytest.mark.parametrize("bad", ["zero", "not-a-number"])
def test_the_cli_answers_over_a_bad_stored_median(liger_catalog: Catalog, bad: str) -> None:
    leaders = _leaders(liger_catalog)
    _store(liger_catalog, leaders, *BAD_MEDIANS[bad])
    runner = CliRunner()
    for args in (["show", "rope"], ["show", "run", leaders[0]], ["records"], ["search", "rope"],
                 ["compare", leaders[0], leaders[1]], ["show", "run", leaders[0], "--json"]):
        result = runner.invoke(ki, [*args, "--database", liger_catalog.url], env={"COLUMNS": "160"})
        assert result.exit_code == 0, (bad, args, result.output[-600:])


def test_a_run_whose_required_parts_are_unreadable_is_left_out_with_its_reason(liger_catalog: Catalog) -> None:
    leaders = _leaders(liger_catalog)
    with liger_catalog.engine.begin() as conn:
        body = json.loads(conn.execute(select(RunRow.body).where(RunRow.run_id == leaders[0])).scalar_one())
        body["spec"]["status"] = {"not": "a status"}
        conn.execute(update(RunRow).where(RunRow.run_id == leaders[0]).values(body=json.dumps(body)))
        conn.execute(update(CatalogStateRow).values(version=CatalogStateRow.version + 1))
    with TestClient(make_app(liger_catalog)) as client:
        for path in [*SITE, *API]:
            assert client.get(path).status_code == 200, path
        page = client.get("/api/v1/operations/rope").json()
        missing = client.get(f"/api/v1/runs/{leaders[0]}")
    assert leaders[0] not in {row["run_id"] for row in page["ranked"]}
    assert missing.status_code == 404 and "cannot be read" in missing.json()["detail"]
    assert "status" in missing.json()["detail"]


def test_an_absurd_median_is_invalid_however_it_is_stored(liger_catalog: Catalog) -> None:
    leaders = _leaders(liger_catalog)
    _store(liger_catalog, leaders[:1], 10**14, 10**14)  # column and manifest agree: a day per call
    with TestClient(make_app(liger_catalog)) as client:
        dossier = client.get(f"/api/v1/runs/{leaders[0]}").json()
        compare = client.get(f"/api/v1/compare?run={leaders[0]}&run={leaders[1]}")
    reasons = [r for r in dossier["not_ranked_reasons"] if r["code"] == "INVALID_STORED_VALUE"]
    assert reasons and "over an hour per call" in reasons[0]["sentence"]
    assert compare.status_code == 200
