"""The shipped runner bundles on the site: verified H200 cohorts in every timed region, each with its
region's floor; the home page counts the verified operations; /challenges lists the rest with a reason."""

from __future__ import annotations

from fastapi.testclient import TestClient

from kernelindex import registry


def _workload(client: TestClient, slug: str, axes: dict[str, int], dtype: str) -> str:
    page = client.get(f"/api/v1/operations/{slug}").json()
    return next(w["key"] for w in page["workloads"] if w["axes"] == axes and set(w["dtypes"].values()) == {dtype})


def test_rms_norm_has_verified_h200_cohorts_in_all_three_regions(client: TestClient) -> None:
    key = _workload(client, "rms-norm", {"rows": 2048, "hidden": 4096}, "bf16")
    page = client.get(f"/api/v1/operations/rms-norm?workload={key}").json()
    verified = {c["mode"]: c for c in page["cohorts"] if c["evidence"] == "verified" and "H200" in c["gpu"]}
    assert set(verified) == {"forward", "backward", "forward+backward"}
    floors = {}
    for mode, cohort in verified.items():
        view = client.get(f"/api/v1/operations/rms-norm?workload={key}&cohort={cohort['key']}").json()
        assert view["floor"]["physical"]["region"] == mode
        floors[mode] = view["floor"]["physical"]["floor_ns"]
        assert view["ranked"][0]["floor_ratio"] > 1  # every verified median sits above its region's floor
        # Runner-19's protocol v4 runs (2026-12-07) superseded runner-7's v3 device times, which had superseded
        # runner-4's graph-replay runs: ranked by stream time, v3's figure kept in each run as kernel busy time.
        assert {r["method"] for r in view["ranked"]} == {"stream-time"}
        assert all(r["method_note"] is None for r in view["ranked"])
    assert floors["forward"] < floors["backward"] < floors["forward+backward"]
    forward = client.get(f"/api/v1/operations/rms-norm?workload={key}&cohort={verified['forward']['key']}").json()
    # Issue 20 item 4: the backward and forward+backward cohorts are verified too, but a card compares
    # like with like: every card of the forward cohort is a forward figure and names its GPU and region.
    titles = [s["title"] for s in forward["headline"]]
    assert titles and all(t.endswith("NVIDIA H200 SXM 141GB · forward") for t in titles)
    assert all(s["kind"] != "fastest_verified" for s in forward["headline"])


def test_2026_12_01_operations_have_verified_h200_cohorts_in_every_region(client: TestClient, catalog) -> None:  # noqa: ANN001
    """The 2026-12-01 bundles (runner keys 3 and 4) are published by the bootstrap of a fresh catalog, in
    every region; the pages show a region's verified cohorts unless every run of it stopped below the
    protocol's 100 samples (issue 19 item 3: under-sampled runs are kept, never ranked)."""
    from kernelindex.readmodel.loading import load_operation

    for slug in ("jsd", "poly-norm", "qwen2vl-mrope", "tvd", "dyt", "fused-moe", "fused-linear-jsd",
                 "fused-linear-grpo-loss-token"):
        data = load_operation(catalog, slug)
        verified = [r for r in data.runs if r.evidence == "verified" or r.spec.runner is not None]
        region = {r.digest: data.protocols[r.protocol].spec.timed_region for r in verified}
        assert set(region.values()) == {"forward", "backward", "forward+backward"}, slug
        sampled = {region[r.digest] for r in verified if r.status == "passed" and r.spec.timing.samples >= 100}
        page = client.get(f"/api/v1/operations/{slug}").json()
        modes = set()
        for workload in page["workloads"]:
            view = client.get(f"/api/v1/operations/{slug}?workload={workload['key']}").json()
            modes |= {c["mode"] for c in view["cohorts"]
                      if c["evidence"] in ("verified", "replicated") and "H200" in c["gpu"]}
        assert modes == sampled, slug
        # fused-moe's v2 forward+backward stopped below 100 samples in every case, until runner-10's v3 runs
        # (2026-12-02) took 100 at experts 8, 16 and 32, and runner-11's at experts 64. The fused-linear GRPO
        # token loss's forward and forward+backward had too, until runner-7's v3 runs (2026-12-01) took 100
        # samples at batch 4 (batch 2's stopped at 75 and are kept, unranked).
        assert len(modes) == 3, slug


def test_every_fused_moe_workload_ranks_a_v3_run_in_every_region(client: TestClient, catalog) -> None:  # noqa: ANN001
    """Issue 19's last region: experts 64 forward+backward (runner-11, 2026-12-02) joined experts 8, 16 and 32, so
    every fused-moe workload shows a verified H200 cohort in all three regions, and no v2 run of them is current."""
    from kernelindex.readmodel.loading import load_operation

    page = client.get("/api/v1/operations/fused-moe").json()
    measured = 0
    for workload in page["workloads"]:  # Liger's reported-only workloads have no H200 cohort
        view = client.get(f"/api/v1/operations/fused-moe?workload={workload['key']}").json()
        modes = {c["mode"] for c in view["cohorts"]
                 if c["evidence"] in ("verified", "replicated") and "H200" in c["gpu"]}
        if modes:
            measured += 1
            assert modes == {"forward", "backward", "forward+backward"}, workload["key"]
    assert measured == 4  # experts 8, 16, 32 and 64
    data = load_operation(catalog, "fused-moe")
    current_v2 = [r for r in data.runs if r.spec.runner is not None and r.status == "passed"
                  and r.spec.timing.method != "cupti-device-time" and r.superseded_by is None]
    assert not current_v2


def test_home_counts_the_operations_the_runner_verified(catalog, now) -> None:  # noqa: ANN001 - Catalog, datetime
    from kernelindex.readmodel.pages_home import home_page

    counts = home_page(catalog, now=now).counts
    assert counts["operations_verified"] >= 14 and counts["operations_verified_backward"] >= 14


def test_home_page_shows_the_count(client: TestClient) -> None:
    assert "operations verified by a KernelIndex runner" in client.get("/").text


def test_challenges_list_every_operation_without_verified_runs_with_its_exact_reason(client: TestClient) -> None:
    """Every curated operation without shipped verified runs has a stated reason in runner_coverage.yaml, and no
    reason stays listed once its operation's bundle ships (the set equality fails both ways)."""
    html = client.get("/challenges").text
    assert "Not verified by a KernelIndex runner" in html
    page = client.get("/api/v1/challenges").json()
    listed = {n["operation"]: n["reason"] for n in page["not_verified"]}
    assert "rms-norm" not in listed and "rope" not in listed
    assert all(reason for reason in listed.values())
    assert set(listed) == set(registry.runner_pending()) | set(registry.runner_unavailable())
    # Since the 2026-12-01 bundles (runner keys 3 and 4) every curated operation has verified runs; the last
    # four with only under-sampled ones (fused-linear CE, CPO, ORPO, SimPO) left the list with runner-6's v3
    # bundles (100 samples or more in every run), as distill-jsd-loss had with runner-5's.
    # FlashInfer-Bench's 16 dense GEMMs and 18 GQA attention definitions joined the registry (issue 25) with
    # runner adapters; runner-9's H200 campaign (2026-12-02) verified the GEMMs and 14 attention definitions,
    # runner-13's the last 4: nothing is left.
    assert listed == {} and registry.runner_pending() == {}
    assert "Not verified by a KernelIndex runner" in html
    # Operations come from the registry and from imported sources (the KernelIndex export brings its own).
    assert len(listed) + 14 <= client.get("/api/v1/operations").json()["total"]


def test_a_row_timed_another_way_than_its_cohort_says_so() -> None:
    from types import SimpleNamespace

    from kernelindex.domain.specs import Timing
    from kernelindex.readmodel.rows import method_note

    def run(method: str, raw: dict[str, str] | None = None) -> SimpleNamespace:
        return SimpleNamespace(spec=SimpleNamespace(timing=Timing(method=method, raw=raw or {})))

    reason = "RuntimeError: operation not permitted when stream is capturing"
    fallback = run("per_call_events", {"capture_failure": reason})
    note = method_note(fallback, "cuda_graph_replay")
    assert note is not None and "per-call CUDA events" in note and "CUDA graph replay" in note
    # What happened and what it means for the figure, in words; the raw message stays in the run's record.
    assert "could not be captured in a CUDA graph: the call synchronises with the GPU from the host" in note
    assert "includes the host's launch of the call" in note and "RuntimeError" not in note
    assert method_note(run("cuda_graph_replay"), "cuda_graph_replay") is None
    assert method_note(run("per_call_events"), "per_call_events") is None  # the cohort's own method: no note


def test_kernelbench_levels_are_counted_only_where_its_problem_set_is_imported(client: TestClient) -> None:
    """The shared test catalog holds the verified bundles but not KernelBench's import: the runner's KernelBench
    problems are there (with their verified cohorts), yet /challenges must not count a level from them alone
    ("8 of 8 verified" for a level of 100); tests/web/test_kernelbench_campaign.py and test_every_source.py count
    them with the import."""
    square = client.get("/api/v1/operations/kernelbench-1-1-square-matrix-multiplication").json()
    assert any(c["evidence"] == "verified" for c in square["cohorts"])
    assert client.get("/api/v1/challenges").json()["kernelbench"] == []
    assert "KernelBench problems verified by a KernelIndex runner" not in client.get("/challenges").text


def test_challenges_give_the_measured_account_of_an_implementation_the_runner_could_not_build(
        client: TestClient) -> None:
    """Issue 45: FlashAttention 3 could not be brought to the GPU machine; /challenges says why, with the sizes
    measured, from runner_coverage.yaml (the page and its JSON twin alike)."""
    unbuilt = client.get("/api/v1/challenges").json()["unbuilt"]
    assert [u["name"] for u in unbuilt] == sorted(registry.unbuilt_implementations())
    fa3 = next(u for u in unbuilt if u["name"] == "flashattention-3")
    assert "hopper/" in fa3["reason"] and "8,453,127 bytes" in fa3["reason"] and "92.0 MB" in fa3["reason"]
    html = client.get("/challenges").text
    assert "Implementations the runner could not build" in html and "FlashAttention 3 (Hopper)" in html
