"""The one-pass load of every operation answers exactly what loading each operation on its own
answers (runs, corrections, attestations, bodies, derived policy, and their order), and the two
share one copy per catalog version."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.lifecycle import retract, supersede
from kernelindex.readmodel.cache import READ_CACHE
from kernelindex.readmodel.loading import OperationData, load_all_operations, load_operation
from kernelindex.readmodel.operations import operation_page
from kernelindex.trust.bundles import bundled_bundles, publish_bundle
from kernelindex.trust.keys import bundled_runner_keys

AT = datetime(2026, 1, 2, tzinfo=UTC)


def _snapshot(data: OperationData) -> dict[str, Any]:
    fields = {f.name: getattr(data, f.name) for f in dataclasses.fields(data) if f.name != "memo"}
    fields["order"] = {k: list(fields[k]) for k in ("workloads", "implementations", "projects", "protocols",
                                                      "environments", "suites")}
    return fields


def _with_corrections(catalog: Catalog) -> Catalog:
    page = operation_page(catalog, "rope", now=AT)
    ranked = operation_page(catalog, "rope", workload=page.selected_workload, cohort=page.cohorts[0].key, now=AT).ranked
    retract(catalog, ranked[0].run_id, reason="timer bug", actor="tests", at=AT)
    # the cohort ranks one row per implementation (Liger, the baseline): supersede the baseline's row by Liger's
    supersede(catalog, ranked[0].run_id, ranked[1].run_id, reason="re-measured", actor="tests", at=AT)
    bundled_runner_keys(catalog, actor="tests")
    publish_bundle(catalog, bundled_bundles()[0], actor="tests")
    return catalog


def test_one_pass_load_equals_loading_each_operation(liger_catalog: Catalog) -> None:
    catalog = _with_corrections(liger_catalog)
    READ_CACHE.clear()
    version = catalog.version()
    slugs = sorted(load_all_operations(catalog))
    READ_CACHE.clear()
    each = {slug: _snapshot(load_operation(catalog, slug)) for slug in slugs}
    READ_CACHE.clear()
    everything = load_all_operations(catalog)
    assert list(everything) == slugs and len(slugs) > 10
    for slug in slugs:
        assert _snapshot(everything[slug]) == each[slug], slug
    runs = [r for d in everything.values() for r in d.runs]
    assert any(r.retracted for r in runs) and any(r.superseded_by for r in runs) and any(r.supersedes for r in runs)
    assert any(r.attested for r in runs)
    assert catalog.version() == version


def test_one_copy_per_version_whichever_loads_first(liger_catalog: Catalog) -> None:
    READ_CACHE.clear()
    single = load_operation(liger_catalog, "rope")
    everything = load_all_operations(liger_catalog)
    assert everything["rope"] is single
    READ_CACHE.clear()
    everything = load_all_operations(liger_catalog)
    assert load_operation(liger_catalog, "embedding") is everything["embedding"]
