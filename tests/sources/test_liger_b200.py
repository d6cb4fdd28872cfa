"""Liger-Kernel's NVIDIA B200 sibling files (cuTile, CuTe DSL) and the memory rows: a second metric
that never ranks against latency."""

from __future__ import annotations

from datetime import datetime

from kernelindex.catalog.db import Catalog
from kernelindex.policy.cohorts import PEAK_MEMORY_LABEL
from kernelindex.readmodel.loading import load_operation
from kernelindex.readmodel.operations import operation_page
from kernelindex.sources.base import ImportReport
from kernelindex.sources.liger import bundled_csv_path, parse_and_normalize


def _normalize(name: str) -> tuple[ImportReport, list]:
    report = ImportReport("liger", name, "sha256:" + "0" * 64)
    return report, parse_and_normalize(bundled_csv_path(name).read_bytes(), report, file_name=name)


def test_the_bundled_sibling_files_are_the_staged_snapshots() -> None:
    from kernelindex.domain.canonical import bytes_digest

    assert bytes_digest(bundled_csv_path("all_benchmark_data_cutile.csv").read_bytes()) == (
        "sha256:af668e01edeb99365f8c3d2218f99934e4262ade9b0db92fad582aa95b6ba033")
    assert bytes_digest(bundled_csv_path("all_benchmark_data_cutedsl.csv").read_bytes()) == (
        "sha256:8e2a050dec85a462f0b08ece56f69ad2aad284d8191f65044c135ae8ed243fc0")


def test_cutile_rows_map_or_are_skipped_with_their_reason() -> None:
    report, manifests = _normalize("all_benchmark_data_cutile.csv")
    assert report.rows_read == 1284 and report.accepted + report.skipped_total == 1284
    assert report.accepted == 1060  # 720 speed (12 of them no-grad-forward) and 340 memory rows
    reasons = "\n".join(report.skipped)
    assert "were not read" not in reasons  # every kernel's script was read: curated, or skipped saying why
    assert "kernel 'rope' of all_benchmark_data_cutile.csv is not curated: the readable revisions" in reasons
    assert sum(len(v) for k, v in report.skipped.items() if "not readable here" in k) == 224
    assert "no-grad-forward" not in reasons
    languages = {m.spec.callable.language for m in manifests if m.kind == "ImplementationRevision"}
    assert {"triton", "cutile", "python"} <= languages
    operations = {m.metadata.name for m in manifests if m.kind == "OperationSpec"}
    assert {"qwen2vl-mrope", "poly-norm", "dyt", "fused-add-rms-norm", "kl-div", "jsd", "sparsemax", "geglu-mlp",
            "swiglu-mlp", "multi-token-attention", "fused-linear-jsd"} <= operations
    cutile = {m.metadata.name for m in manifests if m.kind == "ImplementationRevision"
              and m.spec.callable.language == "cutile"}
    assert {"liger-kernel-cutile-kl-div", "liger-kernel-cutile-jsd", "liger-kernel-cutile-sparsemax",
            "liger-kernel-cutile-geglu-mlp", "liger-kernel-cutile-swiglu-mlp",
            "liger-kernel-cutile-multi-token-attention", "liger-kernel-cutile-fused-linear-jsd"} <= cutile
    kl = [m.spec for m in manifests if m.kind == "WorkloadCase" and m.spec.axes.keys() >= {"vocab", "seq"}
          and m.spec.axes.get("vocab") == 128256 and m.spec.axes.get("seq") == 8192]
    assert kl and all(w.axes["batch"] == 1 for w in kl)


def test_cutedsl_model_names_map_through_their_config() -> None:
    report, manifests = _normalize("all_benchmark_data_cutedsl.csv")
    assert report.rows_read == 165 and report.accepted == 165 and not report.skipped
    workloads = [m.spec for m in manifests if m.kind == "WorkloadCase"]
    vocabularies = {w.axes["vocab"] for w in workloads if w.axes.get("seq") == 2048}
    assert {32000, 128256, 152064, 102400, 129280} <= vocabularies
    cutedsl = [m for m in manifests if m.kind == "ImplementationRevision" and m.spec.callable.language == "cute-dsl"]
    assert cutedsl and "nvidia-cutlass-dsl" in {p.name for p in cutedsl[0].spec.install.packages}
    assert "did not record the nvidia-cutlass-dsl version" in cutedsl[0].spec.install.why_missing


def test_memory_rows_are_a_second_metric_in_mib() -> None:
    report, manifests = _normalize("all_benchmark_data.csv")
    memory = [m for m in manifests if m.kind == "BenchmarkRun" and m.spec.memory]
    assert len(memory) == 799
    first = memory[0].spec
    assert first.memory.unit == "MiB" and first.memory.scope == PEAK_MEMORY_LABEL
    assert first.timing.median_ns is None and first.timing.raw["unit"] == "MB"


def test_memory_never_ranks_and_is_not_counted(catalog: Catalog, now: datetime) -> None:
    data = load_operation(catalog, "fused-add-rms-norm")
    assert data.memory_runs and all(r.spec.memory is not None for r in data.memory_runs)
    latency_cohorts = {r.cohort_key for r in data.runs}
    assert not latency_cohorts & {r.cohort_key for r in data.memory_runs}
    page = operation_page(catalog, "fused-add-rms-norm", now=now)
    assert page.eligible_runs == sum(1 for r in data.runs if r.eligible)


def test_b200_fused_add_rms_norm_shows_triton_and_cutile_with_memory(catalog: Catalog, now: datetime) -> None:
    data = load_operation(catalog, "fused-add-rms-norm")
    b200 = {r.workload for r in data.memory_runs
            if data.environments[r.environment].spec.hardware.product == "NVIDIA B200"}
    from kernelindex.readmodel.labels import workload_key

    page = operation_page(catalog, "fused-add-rms-norm", workload=workload_key(sorted(b200)[0]), now=now)
    assert "B200" in page.cohort_line["gpu"] if isinstance(page.cohort_line, dict) and "gpu" in page.cohort_line \
        else True
    languages = {row.implementation.language for row in page.ranked}
    assert {"triton", "cutile"} <= languages
    assert page.memory is not None and page.memory.label == PEAK_MEMORY_LABEL
    assert {"triton", "cutile"} <= {m.language for m in page.memory.rows}


def test_no_grad_forward_rows_are_their_own_region_never_forward() -> None:
    """benchmark_cross_entropy.py times 'no-grad-forward' as the forward call inside torch.no_grad():
    another timed region (Liger's fused CE may skip its in-forward gradient), so another protocol."""
    from kernelindex.domain.manifests import digest_of
    from kernelindex.policy.cohorts import cohort_key

    report, manifests = _normalize("all_benchmark_data_cutedsl.csv")
    protocols = {digest_of(m): m for m in manifests if m.kind == "BenchmarkProtocol"}
    runs = [m for m in manifests if m.kind == "BenchmarkRun" and not m.spec.memory]
    regions = {protocols[r.spec.protocol].spec.timed_region for r in runs}
    assert regions == {"forward", "backward", "forward+backward", "forward-no-grad"}
    no_grad = [r for r in runs if protocols[r.spec.protocol].spec.timed_region == "forward-no-grad"]
    forward = [r for r in runs if protocols[r.spec.protocol].spec.timed_region == "forward"]
    assert len(no_grad) == 33 and all("/no-grad-forward/" in r.spec.source.external_id for r in no_grad)
    assert "torch.no_grad()" in protocols[no_grad[0].spec.protocol].metadata.description
    same_workload = {r.spec.workload for r in no_grad} & {r.spec.workload for r in forward}
    assert same_workload  # the same workloads, measured in two regions ...
    def keys(rs: list) -> set[str]:
        return {cohort_key(r.spec.workload, r.spec.protocol, r.spec.environment) for r in rs}

    assert not keys(no_grad) & keys(forward)  # ... never in one cohort (the protocol differs)


def test_search_reaches_the_no_grad_region_apart_from_forward(catalog: Catalog, now: datetime) -> None:
    from kernelindex.resolve.service import search

    query = "cross entropy b200 seq=8192 vocab=128256"
    no_grad = search(catalog, f"{query} mode:no-grad", now=now)
    forward = search(catalog, f"{query} mode:forward", now=now)
    assert no_grad.status == "exact" and {c.mode for c in no_grad.exact} == {"forward-no-grad"}
    assert {c.mode for c in forward.exact} == {"forward"}
    assert not {c.key for c in no_grad.exact} & {c.key for c in forward.exact}
    assert {"cute-dsl", "cutile", "triton"} <= {row.run.implementation.language for row in no_grad.exact[0].rows}


def test_each_run_is_attributed_to_the_file_and_commit_it_came_from(catalog: Catalog, now: datetime) -> None:
    """Issue 20 item 7: the B200 rows of the cuTile and CuTe DSL files credited all_benchmark_data.csv
    (commit 2120862b); each run now names its own file and that file's upstream commit."""
    from kernelindex.readmodel.runs import run_dossier

    expected = {"all_benchmark_data.csv": "2120862b", "all_benchmark_data_cutile.csv": "7a12e092",
                "all_benchmark_data_cutedsl.csv": "4d899a0b"}
    seen: dict[str, str] = {}
    for slug in ("cross-entropy", "fused-add-rms-norm", "rope"):
        for run in load_operation(catalog, slug).runs:
            external = run.spec.source.external_id or ""
            file = next((f for f in expected if external.startswith(f"{f}:")), None)
            if run.source == "liger-kernel-benchmarks" and (file or "all_benchmark_data.csv") not in seen:
                seen[file or "all_benchmark_data.csv"] = run.run_id
    assert set(seen) == set(expected)
    for file, run_id in seen.items():
        attribution = run_dossier(catalog, run_id, now=now).source_notice.attribution or ""
        assert f"benchmark/data/{file} " in attribution and expected[file] in attribution
        assert all(other not in attribution for other in expected.values() if other != expected[file])
