"""Issue 43 item 4 and issue 45 item 5, over the bundled catalog: no floor an operation page shows on the H100 or the
H200 (its cohorts' floor panels, the "Not measured on GPU" lines, the "Use this" box) is under the GPU's measured
minimum kernel time, and each names that term."""

from __future__ import annotations

from datetime import UTC, datetime

from kernelindex import registry
from kernelindex.catalog.db import Catalog
from kernelindex.readmodel.cohorts import cohorts_of
from kernelindex.readmodel.loading import load_operation
from kernelindex.readmodel.operation_data import OperationData
from kernelindex.readmodel.operation_model import operation_model
from kernelindex.readmodel.operations import build_operation_page
from kernelindex.readmodel.rows import cohort_floors

NOW = datetime(2026, 12, 7, tzinfo=UTC)
MEASURED = {"h100-sxm": 1230.0, "h200": 1130.0}  # registry/measured_ceilings.yaml, the shortest call per GPU


def test_the_floors_of_every_h100_and_h200_page_include_the_minimum_kernel_time(
        catalog_operations: dict[str, OperationData]) -> None:
    gpus = registry.gpus()
    assert {slug: gpus[slug].min_call_ns for slug in MEASURED} == MEASURED
    under: list[str] = []
    panels = asked = 0
    for slug, data in catalog_operations.items():
        for key, cohort in cohorts_of(data).items():
            gpu = data.gpu_of(cohort.environment)
            floors = cohort_floors(data, cohort) if gpu is not None and gpu.slug in MEASURED else None
            for floor in floors or ():
                panels += floor is not None
                if floor is not None and floor.floor_ns < MEASURED[floor.gpu]:
                    under.append(f"{slug} {key} {floor.kind} {floor.floor_ns:.0f} ns")
        for gpu_word in ("h100", "h200"):  # the page a user asks for on that GPU, with its "Not measured" line
            page = build_operation_page(data, workload=None, cohort=None, gpu=gpu_word, now=NOW)
            for gap in [g for g in (page.asked_gpu, *page.not_measured) if g is not None and g.gpu in MEASURED]:
                asked += 1
                if gap.floor_ns < MEASURED[gap.gpu] or "measured minimum kernel time" not in gap.latency:
                    under.append(f"{slug} ?gpu={gpu_word} not measured on {gap.gpu}: {gap.floor_ns:.0f} ns")
    assert panels > 500 and asked > 200
    assert under == []


def test_the_paged_decode_page_on_the_h100_is_floored_by_a_kernel_not_by_7_ns(catalog: Catalog) -> None:
    """The H100 paged-decode page once read "floor 7 ns … 2211× above": a decode of a few tokens still runs a
    kernel, so its floor on the H100 is that GPU's shortest call, and the page and the "Use this" box say so (the
    H100 lane measured FlashInfer there since: every workload's answer is on the H100 itself)."""
    data = load_operation(catalog, "gqa-paged-decode-h32-kv8-d128-ps1")
    page = build_operation_page(data, workload=None, cohort=None, gpu="h100", now=NOW)
    assert page.floor is not None and page.asked_gpu is None  # measured on the H100
    shortest = registry.gpus()["h100-sxm"].min_call_ns
    assert shortest is not None and 1100 < shortest < 1300
    bounds = []
    for workload in page.workloads:
        answer = operation_model(data, NOW).recommendation(workload.digest, registry.gpus()["h100-sxm"], "forward")
        assert answer.floor is not None and answer.floor["floor_ns"] >= shortest
        bounds.append(answer.floor["bound"])
        if answer.floor["bound"] == "latency":
            assert f"{shortest / 1000:.2f} µs" in answer.floor["latency"]
    assert "latency" in bounds  # the batch-1 decode moves a few kilobytes: a kernel's launch bounds it


def test_a_floor_panel_names_its_latency_term_or_says_why_it_has_none(catalog: Catalog) -> None:
    data = load_operation(catalog, "rope")
    on_h200 = build_operation_page(data, workload=None, cohort=None, gpu="h200", now=NOW)
    assert on_h200.floor is not None and "H200's measured minimum kernel time, 1.13 µs" in on_h200.floor.explanation
    on_a100 = build_operation_page(data, workload=None, cohort=None, gpu="a100", now=NOW)
    assert on_a100.floor is not None
    assert "No latency term: no KernelIndex runner has measured the A100" in on_a100.floor.explanation
