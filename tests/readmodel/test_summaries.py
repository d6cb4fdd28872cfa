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
from kernelindex.readmodel.listing_facts import implementation_lines, workload_entries
from kernelindex.readmodel.operation_data import OperationData
from kernelindex.readmodel.operation_summary import newest_events
from kernelindex.readmodel.operations import operation_page
from kernelindex.readmodel.pages_common import cohort_summaries
from kernelindex.readmodel.pages_home import home_page
from kernelindex.readmodel.versions import VERSIONS, VersionTracker


def _stored(catalog: Catalog) -> dict[str, int]:
    with catalog.engine.connect() as conn:
        return dict(conn.execute(select(OperationSummaryRow.operation, OperationSummaryRow.version)).tuples().all())


def test_a_stored_summary_reads_back_as_the_loaded_operation_says(
        catalog_operations: dict[str, OperationData], now) -> None:  # noqa: ANN001
    later = now + timedelta(days=400)  # a clock that makes every run stale: staleness is the reader's
    for data in catalog_operations.values():
        body, cohorts, workloads, counts = summaries._encoded(summaries.summarize(data))
        for clock in (now, later):
            stored = [summaries._cohort(c, clock) for c in orjson.loads(cohorts)]
            read = summaries._decoded(body, lambda stored=stored: stored,
                                      lambda workloads=workloads: orjson.loads(workloads), clock)
            assert read.cohorts == cohort_summaries(data, clock), data.slug
            assert read.implementations == implementation_lines(data), data.slug
            assert orjson.dumps(read.workloads) == orjson.dumps(workload_entries(data)), data.slug
            assert newest_events(read.newest) == newest_events(read.cohorts_with_leader())
            assert summaries._counts(orjson.loads(counts)) == summaries.counts_in(read), data.slug
    assert any(s.leader and s.leader.stale for d in catalog_operations.values()
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


# --- the catalog-wide listings read from the summaries (readmodel/listings.py) ----------------------


def _ranked_listings(catalog: Catalog) -> tuple[list[dict], list[dict]]:
    """The implementations and workloads listings as the resolver's ranked cohorts give them (what the
    listings computed before they read the stored summaries: every operation loaded and ranked)."""
    from collections import Counter, defaultdict

    from kernelindex import urls
    from kernelindex.resolve.source import CatalogCohortSource

    source = CatalogCohortSource(catalog)
    vocab = source.vocabulary()
    found, operations, eligible = {}, defaultdict(set), Counter()
    workloads = []
    for slug in source.operations():
        op = vocab.operations[slug]
        grouped: dict[str, list] = defaultdict(list)
        for cohort in source.cohorts(slug):
            grouped[cohort.sample.workload_key].append(cohort)
            for run, *_ in cohort.ranked:
                found.setdefault(run.implementation.slug, run.implementation)
                operations[run.implementation.slug].add(slug)
                eligible[run.implementation.slug] += 1
        for key, cohorts in grouped.items():
            sample = cohorts[0].sample
            order = [a for a in op.axes if a in sample.axes] + sorted(a for a in sample.axes if a not in op.axes)
            workloads.append({
                "operation": slug, "key": sample.workload_ref, "digest": key,
                "axes": {a: sample.axes[a] for a in order}, "dtypes": dict(sample.dtypes),
                "eligible_runs": sum(c.eligible_runs for c in cohorts),
                "gpus": sorted({c.sample.gpu_label for c in cohorts}),
                "modes": sorted({c.sample.mode for c in cohorts}),
                "url": urls.operation(slug, ("workload", sample.workload_ref))})
    implementations = [
        {"slug": i.slug, "title": i.title, "project": i.project, "language": i.language, "license": i.license,
         "usable": i.usable, "baseline": i.baseline, "operations": sorted(operations[k]), "eligible_runs": eligible[k],
         "url": urls.implementation(k)}
        for k, i in sorted(found.items())]
    return implementations, sorted(workloads, key=lambda w: (w["operation"], w["key"]))


def test_the_listings_read_from_stored_summaries_are_those_the_ranked_cohorts_give(
        catalog: Catalog, now, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    from kernelindex.readmodel.listings import implementations_list, workloads_list

    implementations, workloads = _ranked_listings(catalog)
    summaries.operation_summaries(catalog, now=now)  # stored, then read back by a worker that loads no run
    READ_CACHE.forget(catalog, lambda key: True)
    monkeypatch.setattr(summaries, "computed_summaries", lambda *_: pytest.fail("a stored summary was recomputed"))
    # exact bytes: key order (the axes in the operation's order) counts
    assert orjson.dumps(implementations_list(catalog, now=now)) == orjson.dumps(implementations)
    assert orjson.dumps(workloads_list(catalog, now=now)) == orjson.dumps(workloads)
    assert orjson.dumps(workloads_list(catalog, "rope", now=now)) == orjson.dumps(
        [w for w in workloads if w["operation"] == "rope"])
    assert len(implementations) > 5 and len(workloads) > 50


def test_summaries_stored_by_other_code_are_computed_again_with_the_listings(
        liger_catalog: Catalog, now, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    from kernelindex.readmodel.listings import implementations_list, workloads_list

    with monkeypatch.context() as previous:  # the code before an upgrade stored its own form
        previous.setattr(summaries, "summary_form", lambda: "previous-code")
        summaries.operation_summaries(liger_catalog, now=now)
    READ_CACHE.forget(liger_catalog, lambda key: True)
    assert summaries.ensure_summaries(liger_catalog) == len(_stored(liger_catalog))
    with liger_catalog.engine.connect() as conn:
        assert set(conn.execute(select(OperationSummaryRow.form)).scalars()) == {summaries.summary_form()}
    implementations, workloads = _ranked_listings(liger_catalog)
    assert implementations_list(liger_catalog, now=now) == implementations
    assert workloads_list(liger_catalog, now=now) == workloads
