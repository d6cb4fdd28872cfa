from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select

from kernelindex import registry
from kernelindex.catalog import publish as publish_module
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.export import export_lines, import_jsonl, write_export
from kernelindex.catalog.lifecycle import UnknownRunError, retract, supersede
from kernelindex.catalog.models import ObjectRow, RunRow
from kernelindex.catalog.publish import PublishError, publish_manifests
from kernelindex.domain.manifests import build
from kernelindex.readmodel.cohorts import cohorts_of
from kernelindex.readmodel.loading import load_operation
from kernelindex.readmodel.operations import operation_page, operations_index
from kernelindex.readmodel.runs import run_dossier
from kernelindex.sources.base import ImportReport
from kernelindex.sources.liger import bundled_csv_path, parse_and_normalize

NOW = datetime(2026, 11, 29, tzinfo=UTC)


def _counts(catalog: Catalog) -> tuple[int, int, int]:
    with catalog.engine.connect() as conn:
        return (
            conn.execute(select(func.count()).select_from(RunRow)).scalar_one(),
            conn.execute(select(func.count()).select_from(ObjectRow)).scalar_one(),
            catalog.version(),
        )


def _manifests() -> list:
    report = ImportReport("liger", "bundled", "x")
    return parse_and_normalize(bundled_csv_path().read_bytes(), report)


def test_failure_halfway_leaves_the_catalog_exactly_as_before(liger_catalog: Catalog, monkeypatch) -> None:  # noqa: ANN001
    before = _counts(liger_catalog)
    extra = build("SoftwareProject", {"name": "Halfway", "kind": "individual"}, {"name": "halfway"})
    run = next(m for m in _manifests() if m.kind == "BenchmarkRun")
    changed_run = build("BenchmarkRun", {**run.model_dump(mode="json")["spec"], "status": "timeout"})
    real_insert = publish_module._insert
    calls = []

    def failing_insert(conn, table, rows):  # noqa: ANN001, ANN202
        calls.append(table)
        if table is publish_module.RunRow and rows:
            raise RuntimeError("disk full (simulated)")
        return real_insert(conn, table, rows)

    monkeypatch.setattr(publish_module, "_insert", failing_insert)
    with pytest.raises(RuntimeError, match="simulated"):
        publish_manifests(liger_catalog, [extra, changed_run], actor="test")
    assert publish_module.ObjectRow in calls  # the object rows were written before the failure...
    assert _counts(liger_catalog) == before  # ...and rolled back with it


def test_a_run_needs_its_references(empty_catalog: Catalog) -> None:
    run = next(m for m in _manifests() if m.kind == "BenchmarkRun")
    with pytest.raises(PublishError, match="neither in this batch nor in the catalog"):
        publish_manifests(empty_catalog, [run], actor="test")
    assert _counts(empty_catalog) == (0, 0, 0)


def _rope_forward_leader(catalog: Catalog) -> str:
    return operation_page(catalog, "rope", now=NOW).ranked[0].run_id


def test_retraction_changes_ranking_counts_and_keeps_the_run_readable(liger_catalog: Catalog) -> None:
    before = operation_page(liger_catalog, "rope", now=NOW)
    leader = before.ranked[0].run_id
    retract(liger_catalog, leader, reason="clock throttled during the sweep", actor="alice")
    page = operation_page(liger_catalog, "rope", cohort=before.selected_cohort, now=NOW)
    assert page.eligible_runs == 47
    assert page.ranked[0].median_ns == 59488 and leader not in [r.run_id for r in page.ranked]
    assert {s.slug: s.eligible_runs for s in operations_index(liger_catalog)}["rope"] == 47
    dossier = run_dossier(liger_catalog, leader, now=NOW)
    assert dossier.retraction["reason"] == "clock throttled during the sweep"
    assert dossier.retraction["actor"] == "alice" and dossier.rank is None
    assert [r["code"] for r in dossier.not_ranked_reasons] == ["RETRACTED"]


def test_supersession_links_both_ways(liger_catalog: Catalog) -> None:
    page = operation_page(liger_catalog, "rope", now=NOW)
    first = page.ranked[0].run_id
    cohort = next(c for c in cohorts_of(load_operation(liger_catalog, "rope")).values()
                  if c.ranked and c.leader is not None and c.leader.run_id == first)
    second = cohort.run(cohort.replicates[cohort.leader.digest][0]).run_id  # Liger's other sweep at this shape
    supersede(liger_catalog, second, first, reason="re-run with a fixed clock", actor="bob")
    old, new = run_dossier(liger_catalog, first, now=NOW), run_dossier(liger_catalog, second, now=NOW)
    assert old.superseded_by == second and new.supersedes == [first]
    assert operation_page(liger_catalog, "rope", cohort=page.selected_cohort, now=NOW).ranked[0].run_id == second


def test_unknown_run_is_a_clear_error(liger_catalog: Catalog) -> None:
    with pytest.raises(UnknownRunError, match="matches no run"):
        retract(liger_catalog, "0123456789abcdef", reason="x", actor="a")


def test_export_round_trip_reproduces_the_digests(
    liger_catalog: Catalog, empty_catalog: Catalog, tmp_path: Path
) -> None:
    retract(liger_catalog, _rope_forward_leader(liger_catalog), reason="test", actor="t")
    path = tmp_path / "catalog.jsonl"
    written = write_export(liger_catalog, path)
    lines = path.read_text().splitlines()
    assert '"kind":"Source"' in lines[0] and "BSD-2-Clause" in lines[0] and "LinkedIn" in lines[0]
    assert '"kind":"Retraction"' in lines[-1]
    import_jsonl(empty_catalog, path, actor="test", refused=registry.refused_sources())
    assert sorted(export_lines(empty_catalog)) == sorted(lines) and written == len(lines)
    assert operation_page(empty_catalog, "rope", now=NOW).eligible_runs == 47
