"""Issue 44 item 4: when the asked GPU has no run, search lists the other GPUs' cohorts by the one nearest-GPU rule
(``policy.nearest_gpu``: the same architecture, then verified over reported, then freshness, then bandwidth) that the
operation page's banner and ``ki use`` follow — not by the priority-GPU list, which put Liger's reported H100 rows of
tvd above the H200's verified ones. At the same distance, the asked workload on another GPU lists before the asked
GPU's other dtypes."""

from __future__ import annotations

from datetime import datetime

import pytest

from kernelindex.catalog.db import Catalog
from kernelindex.resolve.results import CohortResult
from kernelindex.resolve.service import search
from kernelindex.resolve.use import use_text


def _gpus_in_order(cohorts: tuple[CohortResult, ...], mode: str) -> list[str]:
    """The GPUs of one region's cohorts, each once, in the order they are listed."""
    return list(dict.fromkeys(c.gpu for c in cohorts if c.mode == mode and c.gpu))


def _lead_evidence(cohort: CohortResult) -> str:
    return cohort.rows[0].run.evidence


@pytest.mark.parametrize("gpu", ["a100", "h100-pcie"])
def test_tvd_on_an_unmeasured_gpu_lists_the_h200s_verified_rows_first(catalog: Catalog, now: datetime,
                                                                       gpu: str) -> None:
    """tvd has the H200 lane's verified runs and Liger's reported H100 rows, nothing else: for the A100 (no Ampere
    runs) and the H100 PCIe (Hopper, as both are) the verified H200 comes first, on the priority list's H100 SXM."""
    r = search(catalog, f"tvd {gpu}", now=now)
    assert r.status == "no_exact_evidence" and r.exact == ()
    assert _gpus_in_order(r.compatible, "forward") == ["h200", "h100-sxm"]
    assert _lead_evidence(r.compatible[0]) == "verified"
    assert {_lead_evidence(c) for c in r.compatible if c.gpu == "h100-sxm"} == {"reported"}


def test_a_hopper_gpu_without_runs_lists_hopper_verified_before_ampere_reported(catalog: Catalog,
                                                                                 now: datetime) -> None:
    """rope's seed workload: verified on the H100 SXM and the H200, reported on the A100 (Liger's 2024 rows)."""
    r = search(catalog, "rope seq=2048 hidden=8192 bf16 h100-pcie", now=now)
    assert r.status == "no_exact_evidence"
    for mode in ("forward", "backward"):
        order = _gpus_in_order(r.compatible, mode)
        assert order[-1] == "a100-80gb" and set(order[:-1]) == {"h100-sxm", "h200"}, (mode, order)


@pytest.mark.parametrize("query", ["tvd batch=8 seq=2048 vocab=4096 fp32 h100-pcie",
                                   "rope seq=2048 hidden=8192 bf16 h100-pcie",
                                   "rope seq=2048 hidden=8192 bf16 b200",
                                   "layer-norm rows=4096 hidden=1024 fp32 b200"])
def test_search_leads_with_the_gpu_ki_use_names(catalog: Catalog, now: datetime, query: str) -> None:
    """One rule: the first cohort search offers is on the GPU the recommendation names as the nearest measured."""
    use = use_text(catalog, query, now=now)
    assert isinstance(use, dict) and use["status"] == "not_measured_on_gpu"
    nearest = use["recommendation"]["nearest"]
    r = search(catalog, query, now=now)
    assert r.compatible[0].gpu == nearest["gpu"]
    assert _lead_evidence(r.compatible[0]) == nearest["answers"][0]["evidence"] == "verified"


def test_the_asked_dtype_elsewhere_lists_before_another_dtype_on_the_asked_gpu(catalog: Catalog,
                                                                             now: datetime) -> None:
    """Layer norm on the B200 was measured only in bf16 (Liger's cuTile file). Asked in fp32, the same fp32 workload
    on the Hopper and Ampere GPUs lists first, by the nearest-GPU rule, then the B200's bf16 row: what wins in bf16
    says little of what wins in fp32. Both kinds stay in the answer."""
    r = search(catalog, "layer-norm rows=4096 hidden=4096 fp32 b200 mode:forward", now=now)
    differs = [tuple(m.field for m in c.mismatches) for c in r.compatible]
    first_dtype = differs.index(("dtype",))
    assert first_dtype > 0 and set(differs[:first_dtype]) == {("gpu",)}
    assert r.compatible[first_dtype].gpu == "b200"
    assert _gpus_in_order(r.compatible[:first_dtype], "forward")[-1] == "a100-80gb"  # reported, and no Hopper part
