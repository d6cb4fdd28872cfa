"""The stored per-operation summaries (readmodel/summaries.py): what the home, records, GPU and
challenge pages read instead of loading every run. They must say exactly what the loaded operation
says (the same cohort summaries, staleness decided by the reader's clock), be computed once per
version of an operation's data and read back by any worker, and move with a publication that touches
their operation only."""

from __future__ import annotations

from datetime import timedelta

import orjson
import pytest
from sqlalchemy import select

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.lifecycle import retract
from kernelindex.catalog.models import OperationSummaryRow
from kernelindex.readmodel import summaries
from kernelindex.readmodel.cache import READ_CACHE
from kernelindex.readmodel.loading import load_all_operations
from kernelindex.readmodel.operations import operation_page
from kernelindex.readmodel.pages_common import cohort_summaries
from kernelindex.readmodel.pages_home import home_page
from kernelindex.readmodel.versions import VERSIONS, VersionTracker


def _stored(catalog: Catalog) -> dict[str, int]:
    with catalog.engine.connect() as conn:
        return dict(conn.execute(select(OperationSummaryRow.operation, OperationSummaryRow.version)).tuples().all())


def test_a_stored_summary_reads_back_as_the_loaded_operation_says(catalog: Catalog, now) -> None:  # noqa: ANN001
    later = now + timedelta(days=400)  # a clock that makes every run stale: staleness is the reader's
    for data in load_all_operations(catalog).values():
        body, cohorts = summaries._encoded(summaries.summarize(data))
        for clock in (now, later):
            stored = [summaries._cohort(c, clock) for c in orjson.loads(cohorts)]
            read = summaries._decoded(body, lambda stored=stored: stored, clock)
            assert read.cohorts == cohort_summaries(data, clock), data.slug
            assert summaries.newest_events(read.newest) == summaries.newest_events(read.cohorts_with_leader())
    assert any(s.leader and s.leader.stale for d in load_all_operations(catalog).values()
               for s in cohort_summaries(d, later))


def test_every_operation_is_summarised_once_and_read_back_without_loading_runs(
        catalog: Catalog, now, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    first = summaries.operation_summaries(catalog, now=now)
    versions = VERSIONS.current(catalog)
    assert _stored(catalog) == {s.slug: versions.of(s.slug) for s in first}
    # another worker: nothing kept in memory, its own view of the versions; it must not load an operation
    READ_CACHE.forget(catalog, lambda key: True)
    monkeypatch.setattr(summaries, "VERSIONS", VersionTracker())
    monkeypatch.setattr(summaries, "computed_summaries", lambda *_: pytest.fail("a stored summary was recomputed"))
    again = summaries.operation_summaries(catalog, now=now)
    assert again == first and [s.cohorts for s in again] == [s.cohorts for s in first]


def test_every_worker_names_an_operations_data_by_the_same_version(liger_catalog: Catalog, now) -> None:  # noqa: ANN001
    running = VersionTracker()  # a worker that saw the catalog before the retraction
    before = running.current(liger_catalog)
    retract(liger_catalog, _rope_leader(liger_catalog, now), reason="bench rig misconfigured", actor="pytest")
    old_worker, new_worker = running.current(liger_catalog), VersionTracker().current(liger_catalog)
    assert new_worker.of("rope") == old_worker.of("rope") > before.of("rope")
    assert new_worker.of("embedding") == old_worker.of("embedding") == before.of("embedding")


def _rope_leader(catalog: Catalog, now) -> str:  # noqa: ANN001
    return operation_page(catalog, "rope", now=now).ranked[0].run_id


def test_a_retraction_recomputes_its_operations_summary_only(liger_catalog: Catalog, now) -> None:  # noqa: ANN001
    home = home_page(liger_catalog, now=now)
    stored = _stored(liger_catalog)
    leader = _rope_leader(liger_catalog, now)
    assert leader in _leaders(liger_catalog, now)
    retract(liger_catalog, leader, reason="bench rig misconfigured", actor="pytest")
    after = home_page(liger_catalog, now=now)
    moved = {slug for slug, version in _stored(liger_catalog).items() if stored.get(slug) != version}
    assert moved == {"rope"}
    assert after.counts["eligible_runs"] == home.counts["eligible_runs"] - 1
    assert leader not in _leaders(liger_catalog, now)


def _leaders(catalog: Catalog, now) -> set[str]:  # noqa: ANN001
    return {c.leader.run_id for s in summaries.operation_summaries(catalog, now=now) for c in s.cohorts_with_leader()
            if c.leader}
