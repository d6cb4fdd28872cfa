"""Enough samples, always (issue 19 item 3): a run below its protocol's minimum samples is not ranked,
counted or a record holder on any surface, and its run page says why. Real shipped bundles: the H200
jsd bundle holds 36 runs that stopped at the runner's hard time limit with 20–80 of 100 samples."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient
from pagetext import text_of
from typer.testing import CliRunner
from web_helpers import make_app

from kernelindex.catalog.db import Catalog
from kernelindex.cli import app as ki
from kernelindex.policy.eligibility import EligibilityFacts, SampleCount, eligibility
from kernelindex.readmodel.cohorts import cohort_record_events, cohorts_of
from kernelindex.readmodel.loading import Run, load_operation
from kernelindex.trust.bundles import bundled_bundles, publish_bundle
from kernelindex.trust.keys import bundled_runner_keys


def _publish(catalog: Catalog, *names: str) -> None:
    bundled_runner_keys(catalog)
    for path in bundled_bundles():
        if path.name in names:
            publish_bundle(catalog, path)


def _under_sampled(runs: list[Run]) -> list[Run]:
    return [r for r in runs if r.spec.timing.samples is not None and r.spec.timing.samples < 100]


def test_the_policy_names_the_shortfall_and_the_stop() -> None:
    stop = "hard time limit (3x the case budget) before min_samples"
    short = eligibility(EligibilityFacts("passed", True, False, False, 5_000, SampleCount(20, 100, stop)))
    assert not short.eligible and [r.code for r in short.reasons] == ["UNDER_SAMPLED"]
    assert short.reasons[0].sentence.startswith("Under-sampled: 20 of 100 samples, the protocol's minimum.")
    assert stop in short.reasons[0].sentence
    # Enough samples, however it stopped (the runner wrote that stop reason on runs with >= 100 samples too).
    assert eligibility(EligibilityFacts("passed", True, False, False, 5_000, SampleCount(100, 100, stop))).eligible
    # No minimum declared, or no count recorded (most sources): nothing to hold the run to.
    assert eligibility(EligibilityFacts("passed", True, False, False, 5_000, SampleCount(3, None))).eligible
    assert eligibility(EligibilityFacts("passed", True, False, False, 5_000, SampleCount(None, 100))).eligible
    # Runner v3 says it itself (timing.under_sampled): held to that, with its reason.
    v3 = eligibility(EligibilityFacts("passed", True, False, False, 5_000,
                                      SampleCount(40, 100, "hard time limit", declared=True)))
    said = v3.reasons[0].sentence
    assert not v3.eligible and "40 of 100 samples" in said and "hard time limit" in said


def test_under_sampled_runs_leave_every_surface(empty_catalog: Catalog) -> None:
    _publish(empty_catalog, "h200-jsd-20261201")
    data = load_operation(empty_catalog, "jsd")
    short = _under_sampled(data.runs)
    assert len(short) == 36 and all(r.status == "passed" for r in short)  # passed, yet not eligible
    assert all(not r.eligible and r.eligibility and r.eligibility.reasons[-1].code == "UNDER_SAMPLED" for r in short)
    short_ids = {r.run_id for r in short}
    # Rankings and records: no cohort ranks one, no record event (first, beaten) ever names one.
    for cohort in cohorts_of(data).values():
        assert not {cohort.run(e.item.id).run_id for e in cohort.ranked} & short_ids
        holders = {e.holder for e in cohort_record_events(cohort)} | {e.previous for e in cohort_record_events(cohort)}
        assert not {cohort.run(d).run_id for d in holders if d} & short_ids
    with TestClient(make_app(empty_catalog)) as client:
        _check_api_and_pages(client, short, data.runs)
    result = CliRunner().invoke(ki, ["records", "--operation", "jsd", "--json", "--database", empty_catalog.url])
    assert result.exit_code == 0, result.output
    assert not _holder_ids(json.loads(result.stdout)) & short_ids


def _holder_ids(records: dict) -> set[str]:
    return {(c["leader"] or {}).get("run_id") for c in records["cohorts"]} - {None}


def _check_api_and_pages(client: TestClient, short: list[Run], runs: list[Run]) -> None:
    short_ids = {r.run_id for r in short}
    eligible = len(runs) - len(short)
    page = client.get("/api/v1/operations/jsd").json()
    assert page["eligible_runs"] == eligible == 36
    assert client.get("/api/v1/home").json()["counts"]["eligible_runs"] == eligible
    records = client.get("/api/v1/records", params={"operation": "jsd", "limit": 200}).json()
    assert records["cohorts"] and not _holder_ids(records) & short_ids
    ranked, csv = set(), ""
    for workload in page["workloads"]:
        view = f"/api/v1/operations/jsd?workload={workload['key']}"
        for option in client.get(view).json()["cohorts"]:
            ranked |= {r["run_id"] for r in client.get(f"{view}&cohort={option['key']}").json()["ranked"]}
            csv += client.get(f"{view}&cohort={option['key']}&format=csv").text
    assert len(ranked) == eligible and not ranked & short_ids
    assert all(run_id in csv for run_id in ranked) and not any(run_id in csv for run_id in short_ids)
    run = short[0]
    dossier = client.get(f"/api/v1/runs/{run.run_id}").json()
    assert dossier["rank"] is None and dossier["samples_minimum"] == 100
    assert client.get(dossier["operation_url"]).status_code == 200  # its cohort ranks nothing: the operation
    assert dossier["not_ranked_reasons"][-1]["code"] == "UNDER_SAMPLED"
    html = text_of(client.get(f"/runs/{run.run_id}").text)
    taken = run.spec.timing.samples
    assert f"Not ranked: Under-sampled: {taken} of 100 samples, the protocol's minimum." in html
    assert f"Samples {taken} of the protocol's minimum 100 under-sampled" in html
    search = client.get("/api/v1/search", params={"q": "jsd gpu:h200"}).json()
    listed = {row["run_id"] for c in search["exact"] for row in c.get("rows", [])}
    assert listed and not listed & short_ids
    said = {n["run_id"] for c in search["exact"] for n in c["not_ranked"] if n["code"] == "UNDER_SAMPLED"}
    assert said == short_ids


def test_the_bundled_catalog_ranks_no_under_sampled_run(catalog: Catalog) -> None:
    """Acceptance: no ranked verified run has fewer samples than its protocol's minimum (the shipped v2
    bundles held 95 record holders that stopped short, some at 10 of 100 samples)."""
    from kernelindex.readmodel.loading import load_all_operations

    ranked_short = []
    for data in load_all_operations(catalog).values():
        for cohort in cohorts_of(data).values():
            runs = [cohort.run(e.item.id) for e in cohort.ranked]
            ranked_short += [r.run_id for r in _under_sampled(runs)
                             if r.spec.timing.samples < (data.protocols[r.protocol].spec.repetitions.count or 0)]
    assert ranked_short == []

