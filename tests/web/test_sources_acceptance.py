"""Issue 10 acceptance on the bundled catalog (Liger's three files and the publishable part of the
KernelIndex catalog export), through the pages and the JSON API."""

from __future__ import annotations

from datetime import datetime

from fastapi.testclient import TestClient

from kernelindex import registry
from kernelindex.catalog.db import Catalog
from kernelindex.domain.units import format_duration
from kernelindex.readmodel.loading import load_operation
from kernelindex.resolve.service import search

GQA = "gqa-paged-decode-h32-kv4-d128-ps1"


def _escaped(text: str) -> str:
    return text.replace("'", "&#39;").replace("&", "&amp;") if "&" in text else text.replace("'", "&#39;")


def test_no_sol_execbench_row_anywhere(catalog: Catalog) -> None:
    from sqlalchemy import func, select

    from kernelindex.catalog.models import ObjectRow, RunRow

    with catalog.engine.connect() as conn:
        refused = select(func.count()).select_from(RunRow).where(RunRow.source == "sol-execbench")
        assert conn.execute(refused).scalar_one() == 0
        kinds = ObjectRow.kind.in_(["Source", "SoftwareProject"])
        bodies = conn.execute(select(ObjectRow.body).where(kinds)).scalars()
        assert not any("sol-execbench" in b or "SOL-ExecBench" in b for b in bodies)


def test_gqa_paged_decode_page_b200_records_floor_artifact_and_failed_runs(client: TestClient) -> None:
    api = client.get(f"/api/v1/operations/{GQA}?gpu=b200").json()  # the verified H200 cohort heads the page
    assert "B200" in api["cohort_line"]["gpu"] and api["cohort_line"]["statistic"] == "mean"
    assert api["ranked"] and api["floor"]["physical"]["bytes_total"] > 0
    data_floor = api["floor"]["physical"]
    assert data_floor["flops"] and data_floor["compute_ns"]  # attention 4·H·D·tokens
    html = client.get(f"/operations/{GQA}?gpu=b200").text
    assert "FlashInfer-Bench (flashinfer-ai/flashinfer-trace)" in html and "Apache-2.0" in html
    slug = api["ranked"][0]["implementation"]["slug"]
    impl = client.get(f"/implementations/{slug}").text
    assert "source at" in impl and "sha256" in impl and "license Apache-2.0" in impl
    impl_json = client.get(f"/api/v1/implementations/{slug}").json()
    failed = [r for r in impl_json["runs"] if r["status"] != "passed"]
    assert failed and not any(r["rank"] for r in failed)
    assert "failed evidence, never ranked" in impl
    ranked_ids = {r["run_id"] for r in api["ranked"]}
    assert not ranked_ids & {r["run_id"] for r in failed}
    dossier = client.get(f"/api/v1/runs/{failed[0]['run_id']}").json()
    assert dossier["status"] in ("runtime_error", "compile_error") and dossier["rank"] is None
    assert any(r["code"] == "STATUS_NOT_PASSED" for r in dossier["not_ranked_reasons"])


def test_amd_fp8_mm_ranks_mi300x_latencies_with_a_compute_floor(client: TestClient) -> None:
    api = client.get("/api/v1/operations/gpumode-amd-fp8-mm").json()
    assert api["cohort_line"]["gpu"] == "AMD Instinct MI300X"
    assert len(api["ranked"]) > 3
    floor = api["floor"]["physical"]
    assert floor["gpu"] == "mi300x" and floor["flops"] > 0 and floor["compute_ns"] > 0
    html = client.get("/operations/gpumode-amd-fp8-mm").text
    assert "GPU Mode and the KernelBot dataset" in html and "June 9 Researcher Reciprocity License v1.0" in html


def test_conv2d_scores_are_suite_scoped_and_never_mixed_with_latencies(client: TestClient, catalog: Catalog) -> None:
    api = client.get("/api/v1/operations/gpumode-conv2d-v2").json()
    assert api["ranked"] == [] and api["eligible_runs"] == 0
    gpus = {board["gpu"] for board in api["leaderboards"]}
    assert {"NVIDIA A100 (variant not recorded)", "NVIDIA H100 (variant not recorded)", "NVIDIA B200",
            "NVIDIA L4"} <= gpus
    for board in api["leaderboards"]:
        scores = [row["score_s"] for row in board["rows"]]
        assert scores == sorted(scores) and board["rows"][0]["rank_label"] == "1"
    html = client.get("/operations/gpumode-conv2d-v2").text
    assert "Leaderboard (source-native score)" in html
    # Issue 46 item 7: a score in seconds reads in µs/ms like every latency, its exact seconds on hover
    first = api["leaderboards"][0]["rows"][0]
    assert f'title="{first["score_s"]:.6g} s">{format_duration(first["score_s"] * 1e9, 2)}</a>' in html
    data = load_operation(catalog, "gpumode-conv2d-v2")
    assert not {r.cohort_key for r in data.runs} & {r.cohort_key for r in data.score_runs}


def test_a_score_runs_page_and_ki_show_run_read_it_in_us_or_ms(client: TestClient, catalog: Catalog) -> None:
    """Issue 46 item 7: the run page and ``ki show run`` give a leaderboard score (seconds) as every latency."""
    from typer.testing import CliRunner

    from kernelindex.cli import app as ki

    board = client.get("/api/v1/operations/gpumode-conv2d-v2").json()["leaderboards"][0]
    row = board["rows"][0]
    shown = format_duration(row["score_s"] * 1e9, 2)
    html = client.get(f"/runs/{row['run_id']}").text
    assert f"score {shown}</h1>" in html and f'title="{row["score_s"]:.6g} s">{shown}</span>' in html
    printed = CliRunner().invoke(ki, ["show", "run", row["run_id"], "--database", catalog.url], env={"COLUMNS": "160"})
    assert printed.exit_code == 0 and f"score ({board['statistic']})" in printed.stdout and shown in printed.stdout
    assert "median" not in printed.stdout


def test_fused_add_rms_norm_b200_triton_and_cutile_with_memory(client: TestClient, catalog: Catalog,
                                                               now: datetime) -> None:
    r = search(catalog, "fused add rms norm b200", now=now)
    assert r.status == "exact" and r.exact
    for cohort in r.exact:
        assert cohort.gpu == "b200"
    languages = {row.run.implementation.language for row in r.exact[0].rows}
    assert {"triton", "cutile"} <= languages
    first = r.exact[0]
    api = client.get("/api/v1/operations/fused-add-rms-norm",
                     params={"workload": first.workload_ref, "cohort": first.cohort_ref}).json()
    assert {row["language"] for row in api["memory"]["rows"]} >= {"triton", "cutile"}
    html = client.get("/operations/fused-add-rms-norm",
                      params={"workload": first.workload_ref, "cohort": first.cohort_ref}).text
    assert "Peak memory on this GPU for this workload" in html


def test_home_page_names_every_published_source_with_its_attribution(client: TestClient) -> None:
    home = client.get("/").text
    for name in ("liger-kernel-benchmarks", "flashinfer-bench", "gpumode-kernelbot"):
        policy = registry.source_policy(name)
        assert policy.title in home and _escaped(policy.attribution) in home
    assert "SOL-ExecBench" not in home


def test_a_mean_run_and_one_run_of_every_source_and_status_render_their_page(client: TestClient,
                                                                              catalog: Catalog) -> None:
    """The run page once read a median every run has: FlashInfer-Bench's and GPU MODE's mean runs answered 500."""
    from sqlalchemy import func, select

    from kernelindex.catalog.models import RunRow

    mean_run = client.get(f"/api/v1/operations/{GQA}?gpu=b200").json()["ranked"][0]["run_id"]
    page = client.get(f"/runs/{mean_run}")
    assert page.status_code == 200 and "<h1>" in page.text and "mean " in page.text.split("</h1>")[0]
    with catalog.engine.connect() as conn:
        samples = conn.execute(select(func.min(RunRow.run_id)).group_by(RunRow.source, RunRow.status)).scalars()
        run_ids = list(samples)
    assert len(run_ids) >= 4
    for run_id in run_ids:
        assert client.get(f"/runs/{run_id}").status_code == 200, run_id


def test_compare_refuses_score_and_memory_runs_by_name_instead_of_failing(client: TestClient,
                                                                          catalog: Catalog) -> None:
    scores = load_operation(catalog, "gpumode-conv2d-v2").score_runs
    memory = load_operation(catalog, "fused-add-rms-norm").memory_runs
    for first, second, what in ((scores[0], scores[1], "a leaderboard score"),
                                (memory[0], memory[1], "a peak-memory figure")):
        answer = client.get("/api/v1/compare", params=[("run", first.run_id), ("run", second.run_id)])
        assert answer.status_code == 400, answer.text
        assert what in answer.json()["detail"] and f"/runs/{first.run_id}" in answer.json()["detail"]
        page = client.get("/compare", params=[("run", first.run_id), ("run", second.run_id)])
        assert page.status_code == 400 and what in page.text
