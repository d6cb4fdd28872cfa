"""A publication invalidates only what it changes (issue 23, item 6): per-operation data and answers
are kept by that operation's own version, so retracting a rope run reloads rope alone and shows on
rope's pages once computed again: every answer is served from the previous version, marked as updating,
for at most ``stale_for_s`` while the new one is computed in the background (issue 50)."""

from __future__ import annotations

import time
from collections.abc import Callable

from fastapi.testclient import TestClient
from sqlalchemy import select, update
from web_helpers import FIXED_NOW

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.lifecycle import retract
from kernelindex.catalog.models import CatalogChangeRow, CatalogStateRow, ObjectRow
from kernelindex.readmodel.loading import load_all_operations, load_operation
from kernelindex.readmodel.operations import operation_page
from kernelindex.trust.bundles import bundled_bundles, publish_bundle
from kernelindex.trust.keys import bundled_runner_keys
from kernelindex.web.app import create_app


def _rope_leader(catalog: Catalog) -> str:
    return operation_page(catalog, "rope", now=FIXED_NOW).ranked[0].run_id


def test_a_retraction_reloads_only_its_operation(liger_catalog: Catalog) -> None:
    before = load_all_operations(liger_catalog)
    leader = _rope_leader(liger_catalog)
    retract(liger_catalog, leader, reason="bench rig misconfigured", actor="pytest")
    after = load_all_operations(liger_catalog)
    assert after["rope"] is not before["rope"]
    assert next(r for r in after["rope"].runs if r.run_id == leader).retracted is not None
    others = [slug for slug in before if slug != "rope"]
    assert others and all(after[slug] is before[slug] for slug in others)  # not reloaded
    with liger_catalog.engine.connect() as conn:
        version = conn.execute(select(CatalogStateRow.version)).scalar_one()
        recorded = conn.execute(
            select(ObjectRow.name).join(CatalogChangeRow, CatalogChangeRow.operation == ObjectRow.digest)
            .where(CatalogChangeRow.version == version)).scalars().all()
    assert recorded == ["rope"]


def test_a_write_that_records_nothing_reloads_everything(liger_catalog: Catalog) -> None:
    before = load_all_operations(liger_catalog)
    with liger_catalog.engine.begin() as conn:  # a hand edit: the version moves, no change is recorded
        conn.execute(update(CatalogStateRow).values(version=CatalogStateRow.version + 1))
    after = load_all_operations(liger_catalog)
    assert all(after[slug] is not before[slug] for slug in before)


def test_a_retraction_shows_on_its_operation_pages_once_recomputed(liger_catalog: Catalog) -> None:
    leader = _rope_leader(liger_catalog)
    app = create_app(liger_catalog, clock=lambda: FIXED_NOW, stale_for_s=60.0)
    with TestClient(app) as client:
        rope_page = client.get("/api/v1/operations/rope").json()
        index = client.get("/api/v1/operations").json()
        assert client.get(f"/api/v1/runs/{leader}").json()["retraction"] is None
        assert leader in {row["run_id"] for row in rope_page["ranked"]}
        retract(liger_catalog, leader, reason="bench rig misconfigured", actor="pytest")
        # the previous answers at once, marked with the version they show; the new ones once computed
        shown = client.get(f"/api/v1/runs/{leader}")
        assert shown.json()["retraction"] is None and shown.headers["x-kernelindex-updating"] == "1"
        assert shown.json()["updating"] == {"shows_version": int(shown.headers["x-kernelindex-version"])}
        stale_index = client.get("/api/v1/operations").json()
        assert stale_index.pop("updating") and stale_index == index
        _eventually(lambda: client.get(f"/api/v1/runs/{leader}").json()["retraction"] is not None)
        _eventually(lambda: leader not in {row["run_id"] for row in
                                           client.get("/api/v1/operations/rope").json()["ranked"]})
        _eventually(lambda: f"/runs/{leader}" not in client.get("/operations/rope").text.split("not ranked")[0])
        _eventually(lambda: client.get("/api/v1/operations").json()["items"] != index["items"])
        assert "updating" not in client.get("/api/v1/operations/rope").json()
    rope = lambda items: next(op for op in items if op["slug"] == "rope")["eligible_runs"]  # noqa: E731
    assert rope(client.get("/api/v1/operations").json()["items"]) == rope(index["items"]) - 1


def _eventually(holds: Callable[[], bool]) -> None:
    """Ask until ``holds()``: the answer is computed again in the background."""
    deadline = time.monotonic() + 30
    while not holds():
        assert time.monotonic() < deadline, "the answer was not computed again in the background"
        time.sleep(0.05)


def test_no_site_wide_answer_is_served_past_its_window(liger_catalog: Catalog) -> None:
    app = create_app(liger_catalog, clock=lambda: FIXED_NOW, stale_for_s=0.0)
    leader = _rope_leader(liger_catalog)
    with TestClient(app) as client:
        index = client.get("/api/v1/operations").json()
        retract(liger_catalog, leader, reason="bench rig misconfigured", actor="pytest")
        time.sleep(0.01)
        assert client.get("/api/v1/operations").json() != index  # past the window: computed on the request


def test_publishing_another_operation_keeps_rope_loaded(liger_catalog: Catalog) -> None:
    rope = load_operation(liger_catalog, "rope")
    other = next(slug for slug in load_all_operations(liger_catalog) if slug != "rope")
    run = next(r for r in load_operation(liger_catalog, other).runs if r.retracted is None)
    retract(liger_catalog, run.run_id, reason="bench rig misconfigured", actor="pytest")
    assert load_operation(liger_catalog, "rope") is rope
    assert load_operation(liger_catalog, other).version > rope.version


def test_verified_runs_change_their_operation_and_the_attainable_inputs(liger_catalog: Catalog) -> None:
    """An attested run may raise a GPU's attainable bandwidth: recorded as such, not as every operation."""
    from kernelindex.catalog.changes import MAY_MOVE_ATTAINABLE, touched_operations

    with liger_catalog.engine.connect() as conn:
        assert touched_operations(conn, [], {}, ["sha256:" + "0" * 64]) == {MAY_MOVE_ATTAINABLE}
        environment = ("ExecutionEnvironment", "sha256:" + "3" * 64, {"spec": {}})
        assert touched_operations(conn, [environment], {}, []) == {MAY_MOVE_ATTAINABLE}
        assert touched_operations(conn, [("BenchmarkProtocol", "sha256:" + "1" * 64, {"spec": {}})], {}, []) == set()
        assert touched_operations(conn, [("TrustedRunner", "sha256:" + "2" * 64, {"spec": {}})], {}, []) is None


def test_a_verified_bundle_reloads_only_operations_whose_floor_moved(liger_catalog: Catalog) -> None:
    """Issue 23 item 6: a verified bundle of one operation reloads that operation, re-attaches the new
    attainable figure to the operations on a GPU whose figure moved, and leaves every other one as it was.
    The shipped H200 environments measured write ceilings of 4.631 (swiglu-mlp), 4.640 (sparsemax) and
    4.646 TB/s (kl-div): the H200's attainable bandwidth is the best of them published so far."""
    bundled_runner_keys(liger_catalog, actor="pytest")
    shipped = {path.name: path for path in bundled_bundles()}
    publish_bundle(liger_catalog, shipped["h200-swiglu-mlp-20261130"], actor="pytest")
    before = load_all_operations(liger_catalog)
    assert before["swiglu-mlp"].attainable["h200"].bandwidth_bytes_per_s == 4.631e12
    elsewhere = [slug for slug, data in before.items() if "h200" not in data.gpu_slugs]
    assert len(elsewhere) > 20  # Liger's operations measured on other GPUs only

    publish_bundle(liger_catalog, shipped["h200-kl-div-20261130"], actor="pytest")  # raises the H200's figure
    raised = load_all_operations(liger_catalog)
    assert raised["kl-div"].version > before["kl-div"].version
    assert raised["swiglu-mlp"].attainable["h200"].bandwidth_bytes_per_s == 4.646e12
    assert raised["swiglu-mlp"].memo is before["swiglu-mlp"].memo  # its rows were not loaded again
    assert all(raised[slug] is before[slug] for slug in elsewhere if slug != "kl-div")

    publish_bundle(liger_catalog, shipped["h200-sparsemax-20261130"], actor="pytest")  # below the figure
    after = load_all_operations(liger_catalog)
    assert after["sparsemax"] is not raised["sparsemax"]
    assert [slug for slug in after if slug != "sparsemax" and after[slug] is not raised[slug]] == []
    with liger_catalog.engine.connect() as conn:
        version = conn.execute(select(CatalogStateRow.version)).scalar_one()
        recorded = conn.execute(select(CatalogChangeRow.operation).where(CatalogChangeRow.version == version))
        assert None not in set(recorded.scalars())  # not "every operation"
