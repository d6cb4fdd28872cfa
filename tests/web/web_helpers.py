"""What the website tests share besides fixtures: the pinned clock, the app over a catalog, and the ids
they navigate by (read from the read model, since digests move when manifests change). A plain module,
not conftest, so test files import it by a name no other test folder uses."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi.testclient import TestClient

from kernelindex.catalog.db import Catalog

FIXED_NOW = datetime(2026, 11, 29, tzinfo=UTC)


def make_app(catalog: Catalog) -> Any:
    from kernelindex.web.app import create_app

    return create_app(catalog, clock=lambda: FIXED_NOW)


def rope_keys_of(catalog: Catalog) -> dict[str, str]:
    """Ids the tests navigate by, read from the read model (digests move when manifests change)."""
    from kernelindex.readmodel.operations import operation_page

    default = operation_page(catalog, "rope", now=FIXED_NOW)
    source = next(c for c in default.cohorts if c.native and c.mode == "forward")  # Liger's A100 forward cohort
    page = operation_page(catalog, "rope", workload=default.selected_workload, cohort=source.key, now=FIXED_NOW)
    # "second": Liger's other measurement of this shape (its other sweep), the leader's replicate: one row
    # per implementation, so it is not ranked beside the leader (issue 20 item 5).
    return {"leader": page.ranked[0].run_id, "second": _replicate(catalog, page.ranked[0].run_id),
            "baseline": page.ranked[1].run_id, "cohort": page.selected_cohort or "",
            "workload": page.selected_workload or ""}


def _replicate(catalog: Catalog, run_id: str) -> str:
    from kernelindex.readmodel.cohorts import cohorts_of
    from kernelindex.readmodel.loading import load_operation

    for cohort in cohorts_of(load_operation(catalog, "rope")).values():
        for lead, others in cohort.replicates.items():
            if cohort.run(lead).run_id == run_id:
                return cohort.run(others[0]).run_id
    raise AssertionError(f"run {run_id} stands for no replicate")


def source_cohort_url(client: TestClient, slug: str) -> str:
    """The operation page on the source's (Liger's) forward cohort of the default workload: the cohort the
    reference pages show. With two runner identities shipped, the default is the replicated H200 cohort."""
    page = client.get(f"/api/v1/operations/{slug}").json()
    cohort = next(c for c in page["cohorts"] if c["native"] and c["mode"] == "forward")
    return f"/operations/{slug}?workload={page['selected_workload']}&cohort={cohort['key']}"
