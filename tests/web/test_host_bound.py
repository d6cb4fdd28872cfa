"""What pages show of runner protocol v3 (issue 19 item 2): the figure is the device time; a host-bound
call says so on its ranked row and run page with its wall time and syncs; a cohort says which statistic
it ranks, and v3 runs never share a cohort with v2's event-timed ones.

The v3 runs here are the shipped v2 jsd backward case (batch 1 × seq 1024 × vocab 128,256, fp32)
re-described as runner v3 records it, with the figures issue 19 gives for Liger (its GPU time ~5 µs,
~426 µs per call of wall time): published unsigned, so "reported", which changes nothing shown here."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient
from pagetext import text_of
from typer.testing import CliRunner
from web_helpers import make_app

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.publish import publish_manifests
from kernelindex.cli import app
from kernelindex.domain.manifests import Manifest, digest_of, parse_manifest
from kernelindex.policy.capture import cross_check_sentence
from kernelindex.readmodel.labels import cohort_key_short
from kernelindex.readmodel.loading import load_operation
from kernelindex.trust.bundles import bundled_bundles, publish_bundle
from kernelindex.trust.keys import bundled_runner_keys

CASE = "batch=1,seq=1024,vocab=128256,fp32/backward/"
LIGER_DEVICE_NS, LIGER_WALL_NS = 4_830, 425_800
CAPTURE = ("RuntimeError: Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the CPU tensor "
           "is pinned.; graph/device 88.157")  # as runner v3 writes a failed capture into cross_check.detail
LABEL = "Host-bound on this host: 425.8 µs per call wall time, 2 syncs per call; device time 4.83 µs"


def _bundle_manifests() -> list[dict[str, Any]]:
    path = next(p for p in bundled_bundles() if p.name == "h200-jsd-20261201")
    return [json.loads(line) for line in (path / "manifests.jsonl").read_text(encoding="utf-8").splitlines()]


def _v3(documents: list[dict[str, Any]]) -> list[Manifest]:
    """The case's v2 protocol and runs, as runner v3 would write them (a protocol of its own)."""
    runs = [d for d in documents if d["kind"] == "BenchmarkRun" and CASE in d["spec"]["source"]["external_id"]]
    protocols = {digest_of(m): m for d in documents if d["kind"] == "BenchmarkProtocol"
                 for m in [parse_manifest(d)]}
    old = json.loads(protocols[runs[0]["spec"]["protocol"]].model_dump_json())
    spec = {**old["spec"], "harness": {"name": "kernelindex-runner", "version": "3"},
            "timer": "CUPTI device time: the durations of the call's kernels, copies and sets"}
    protocol = parse_manifest({**old, "spec": spec, "metadata": {"name": "kernelindex-runner-v3-jsd-backward"}})
    return [protocol, *(_v3_run(run, digest_of(protocol)) for run in runs)]


def _v3_run(run: dict[str, Any], protocol: str) -> Manifest:
    spec, old = run["spec"], run["spec"]["timing"]
    liger = spec["source"]["external_id"].endswith("/liger")
    device = LIGER_DEVICE_NS if liger else old["median_ns"]
    wall = LIGER_WALL_NS if liger else int(device * 1.05)
    timing = {"method": "cupti-device-time", "median_ns": device, "p20_ns": device - 20, "p80_ns": device + 20,
              "samples": 200, "min_samples": 100, "span_median_ns": device + 300,
              "cross_check": {"method": "per_call_events" if liger else "cuda_graph_replay",
                              "median_ns": old["median_ns"], "detail": CAPTURE if liger else "graph/device 1.004"},
              "host": {"wall_ns": wall, "cpu_ns": wall, "syncs_per_call": 2 if liger else 0, "bound": liger}}
    source = {**spec["source"], "external_id": spec["source"]["external_id"] + "/v3"}
    body = {k: v for k, v in spec.items() if k not in ("runner", "artifacts")}
    return parse_manifest({**run, "spec": {**body, "protocol": protocol, "timing": timing, "source": source}})


def test_host_bound_rows_say_it_and_cohorts_say_what_they_rank(empty_catalog: Catalog) -> None:
    bundled_runner_keys(empty_catalog)
    publish_bundle(empty_catalog, next(p for p in bundled_bundles() if p.name == "h200-jsd-20261201"))
    publish_manifests(empty_catalog, _v3(_bundle_manifests()), actor="tests")
    data = load_operation(empty_catalog, "jsd")
    v3 = [r for r in data.runs if r.spec.timing.method == "cupti-device-time"]
    v2 = [r for r in data.runs if r.workload == v3[0].workload and r.spec.timing.method != "cupti-device-time"
          and data.protocols[r.protocol].spec.timed_region == "backward"]
    assert len(v3) == len(v2) == 3 and all(r.eligible for r in v3 + v2)
    assert {r.cohort_key for r in v3}.isdisjoint({r.cohort_key for r in v2})  # never ranked together
    liger = next(r for r in v3 if r.spec.timing.host and r.spec.timing.host.bound)
    with TestClient(make_app(empty_catalog)) as client:
        url = f"/operations/jsd?cohort={cohort_key_short(liger.cohort_key)}"
        page = client.get("/api/v1" + url).json()
        row = next(r for r in page["ranked"] if r["run_id"] == liger.run_id)
        assert row["median_ns"] == LIGER_DEVICE_NS and row["host_bound"] == LABEL[0].lower() + LABEL[1:]
        assert [r["host_bound"] for r in page["ranked"]].count(None) == 2  # the others are not host-bound
        # Its backward only scales the gradient its forward computed: no ratio to the backward's floor.
        assert row["floor_ratio"] is None and row["throughput"] is None
        assert all(r["floor_ratio"] > 1 for r in page["ranked"] if r is not row)
        assert page["cohort_line"]["ranked_statistic"].startswith("median device time per call (CUPTI")
        html = text_of(client.get(url).text)
        assert LABEL in html and "Ranks the median device time per call (CUPTI" in html
        assert "425.8 µs" not in html.replace(LABEL, "")  # the wall time only in the label, never as a figure
        old = client.get(f"/api/v1/operations/jsd?cohort={cohort_key_short(v2[0].cohort_key)}").json()
        assert old["cohort_line"]["ranked_statistic"].endswith("(runner v1/v2): not device time")
        assert not any(r["host_bound"] for r in old["ranked"])
        run = text_of(client.get(f"/runs/{liger.run_id}").text)
        assert "Median device time 4.8 µs (4,830 ns)" in run and f"Host host-bound {LABEL}." in run
        assert "Cross-check 425.8 µs by per-call CUDA events (the call could not be captured" in run
        assert "recorded, never ranked" in run
        assert ("CUDA-graph capture failed: the call copies data between host and GPU memory inside itself (it reads a "
                "value back to Python), which a CUDA graph cannot record; so the cross-check was timed") in run
        result = run[run.index("Result"):run.index("Evidence")]
        assert "Cannot copy between" not in result and "Cannot copy between" in run  # raw: in the manifest shown
        assert cross_check_sentence("graph/device 1.004") is None
        assert "· no ratio: this backward skips work the region's floor counts" in run
        assert client.get(f"/api/v1/runs/{liger.run_id}").json()["floor_ratio"] is None
    _the_cli_says_it_too(empty_catalog, liger.run_id, cohort_key_short(liger.cohort_key))


def _the_cli_says_it_too(catalog: Catalog, run_id: str, cohort: str) -> None:
    def ki(*args: str) -> str:
        result = CliRunner().invoke(app, [*args, "--database", catalog.url], env={"COLUMNS": "400"})
        assert result.exit_code == 0, result.output
        return " ".join(result.stdout.split())

    run = ki("show", "run", run_id)
    assert LABEL[0].lower() + LABEL[1:] in run and "This backward only scales the gradient" in run
    operation = ki("show", "operation", "jsd", "--cohort", cohort)
    assert "ranks the median device time per call (CUPTI" in operation
    assert "In this backward ranking, Liger only scales a gradient computed in the forward" in operation
    assert f"— Liger: {LABEL[0].lower() + LABEL[1:]}" in operation  # shown beside the ranking (issue 43 item 5)


def test_search_rows_say_host_bound_as_the_page_does(empty_catalog: Catalog) -> None:
    """A search answer ranks the same rows as the operation page. The host-bound run here is Liger's backward, which
    only scales the gradient its forward computed: like the page (issue 43 item 5), search does not rank it and says
    why in its JSON, its HTML and the CLI; no ranked row is host-bound."""
    bundled_runner_keys(empty_catalog)
    publish_bundle(empty_catalog, next(p for p in bundled_bundles() if p.name == "h200-jsd-20261201"))
    publish_manifests(empty_catalog, _v3(_bundle_manifests()), actor="tests")
    query = "jsd batch=1 seq=1024 vocab=128256 fp32 h200 mode:backward"
    with TestClient(make_app(empty_catalog)) as client:
        answer = client.get("/api/v1/search", params={"q": query}).json()
        rows = [r for c in answer["exact"] for r in c["rows"]]
        assert rows and not any(r["host_bound"] for r in rows)
        aside = [h for c in answer["exact"] for h in c["not_ranked"] if h["code"] == "OTHER_REGIONS_WORK"]
        assert aside and {h["implementation"] for h in aside} == {"Liger"}
        html = text_of(client.get("/search", params={"q": query}).text)
    assert "Shown beside the ranking, not in it: this backward only scales" in html
    result = CliRunner().invoke(app, ["search", query, "--database", empty_catalog.url], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    assert "Shown beside the ranking, not in it" in " ".join(result.stdout.split())
