"""Links that were shared keep working (issue 46 item 7): a ?cohort= key from an earlier keying rule — the
environment manifest's digest until 2026-11-29, every software entry until 2026-12-03 — answers a 301 to
the same cohort under its key now, on the page and on its JSON twin; other doors say the key to use."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient

from kernelindex.catalog.db import Catalog
from kernelindex.policy.cohorts import cohort_key
from kernelindex.readmodel.cohorts import cohorts_of
from kernelindex.readmodel.labels import cohort_key_short, workload_key
from kernelindex.readmodel.loading import load_operation
from kernelindex.services import reads


@pytest.fixture(scope="module")
def moved(catalog: Catalog) -> tuple[str, str, str]:
    """(the cohort's key before 2026-11-29, its key now, its workload key) for a rope cohort."""
    data = load_operation(catalog, "rope")
    cohort = next(c for c in cohorts_of(data).values() if c.eligible)
    run = cohort.eligible[0]
    former = cohort_key(cohort.workload, cohort.protocol, run.environment, run.metric)  # the rule of 2026-11-28
    assert former != cohort.key
    return cohort_key_short(former), cohort_key_short(cohort.key), workload_key(cohort.workload)


@pytest.mark.parametrize("prefix", ["", "/api/v1"])
def test_an_old_cohort_key_redirects_permanently_to_its_cohort(client: TestClient, moved: tuple[str, str, str],
                                                                prefix: str) -> None:
    former, now, workload = moved
    answer = client.get(f"{prefix}/operations/rope", params={"workload": workload, "cohort": former},
                        follow_redirects=False)
    assert answer.status_code == 301
    location = urlsplit(answer.headers["location"])
    assert location.path == f"{prefix}/operations/rope"
    assert parse_qs(location.query) == {"workload": [workload], "cohort": [now]}
    followed = client.get(f"{prefix}/operations/rope", params={"cohort": former})
    assert followed.status_code == 200 and len(followed.history) == 1
    if prefix:
        assert followed.json()["selected_cohort"] == now


@pytest.mark.parametrize("prefix", ["", "/api/v1"])
def test_an_old_cohort_key_in_the_records_ledger_redirects_to_its_cohort(client: TestClient,
                                                                          moved: tuple[str, str, str],
                                                                          prefix: str) -> None:
    former, now, _ = moved
    answer = client.get(f"{prefix}/records", params={"cohort": former}, follow_redirects=False)
    assert answer.status_code == 301
    location = urlsplit(answer.headers["location"])
    assert location.path == f"{prefix}/records" and parse_qs(location.query) == {"cohort": [now]}
    assert client.get(answer.headers["location"]).status_code == 200


def test_a_key_that_never_named_a_cohort_is_still_refused(client: TestClient) -> None:
    answer = client.get("/operations/rope", params={"cohort": "0123456789ab"}, follow_redirects=False)
    assert answer.status_code == 400 and "is not a cohort of rope" in answer.text
    ledger = client.get("/records", params={"cohort": "0123456789ab"}, follow_redirects=False)
    assert ledger.status_code == 404 and "holds a record" in ledger.text


def test_other_doors_name_the_key_to_use(catalog: Catalog, moved: tuple[str, str, str]) -> None:
    from datetime import UTC, datetime

    former, now, _ = moved
    problem = reads.page(catalog, datetime.now(UTC), "operation", "rope", cohort=former)
    assert problem.code == "cohort_moved" and problem.errors[0]["suggestion"] == now and now in problem.detail
