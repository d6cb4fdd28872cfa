"""A GPU named without its variant ("NVIDIA H100", as GPU MODE writes it): a request for an H100
reaches those runs, labelled "variant not recorded", in their own cohort (never ranked with a
specific variant's runs); leaderboard-only operations say where their scores are."""

from __future__ import annotations

import csv
import io
from datetime import datetime

from kernelindex import registry
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.publish import publish_manifests
from kernelindex.resolve.service import search
from kernelindex.sources.base import ImportReport
from kernelindex.sources.liger import bundled_csv_path, parse_and_normalize

QUERY = "layer norm rows=4096 hidden=1024 dtype:fp32 mode:forward"


def test_variant_not_recorded_may_be_any_listed_variant_and_only_those() -> None:
    assert registry.gpu_may_be("h100-sxm", "h100-variant-not-recorded")
    assert registry.gpu_may_be("h100-pcie", "h100-variant-not-recorded")
    assert registry.gpu_may_be("h100-variant-not-recorded", "h100-sxm")
    assert not registry.gpu_may_be("h100-sxm", "h100-pcie")
    assert not registry.gpu_may_be("b200", "h100-variant-not-recorded")
    assert registry.gpus()["h100-variant-not-recorded"].short == "H100 (variant not recorded)"


def _layer_norm_on_unrecorded_h100(catalog: Catalog) -> None:
    """The H100 SXM layer-norm rows of the Liger CSV, published once as measured and once as if the
    source had written only "NVIDIA H100"."""
    text = bundled_csv_path().read_text(encoding="utf-8")
    rows = [r for r in csv.DictReader(io.StringIO(text, newline=""))
            if r["kernel_name"] == "layer_norm" and r["gpu_name"] == "NVIDIA H100 80GB HBM3"]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows + [{**r, "gpu_name": "NVIDIA H100"} for r in rows])
    report = ImportReport("liger", "test", "sha256:" + "0" * 64)
    manifests = parse_and_normalize(out.getvalue().encode(), report)
    assert report.skipped_total == 0
    publish_manifests(catalog, manifests, actor="test", refused_sources=registry.refused_sources())


def test_h100_request_reaches_unrecorded_variant_in_its_own_cohort(empty_catalog: Catalog, now: datetime) -> None:
    _layer_norm_on_unrecorded_h100(empty_catalog)
    r = search(empty_catalog, f"{QUERY} gpu:h100", now=now)
    assert r.status == "exact"
    by_gpu = {c.gpu: c for c in r.exact}
    assert set(by_gpu) == {"h100-sxm", "h100-variant-not-recorded"}
    sxm, unrecorded = by_gpu["h100-sxm"], by_gpu["h100-variant-not-recorded"]
    assert sxm.key != unrecorded.key
    assert unrecorded.gpu_label == "H100 (variant not recorded)"
    assert {row.run.gpu for row in sxm.rows} == {"h100-sxm"}
    assert {row.run.gpu for row in unrecorded.rows} == {"h100-variant-not-recorded"}
    assert r.exact[0].gpu == "h100-sxm"  # the named variant first
    assert [n.code for n in r.notes] == ["GPU_VARIANT_NOT_RECORDED"]
    pcie = search(empty_catalog, f"{QUERY} gpu:h100-pcie", now=now)
    assert {c.gpu for c in pcie.exact} == {"h100-variant-not-recorded"}
    assert {c.gpu for c in pcie.compatible if any(m.field == "gpu" for m in c.mismatches)} == {"h100-sxm"}
    assert "only on H100 (variant not recorded)" in pcie.gaps[0].message
    b200 = search(empty_catalog, f"{QUERY} gpu:b200", now=now)
    assert b200.exact == () and {c.gpu for c in b200.compatible} == {"h100-sxm", "h100-variant-not-recorded"}


def test_leaderboard_only_operation_points_at_its_scores(catalog: Catalog, now: datetime) -> None:
    r = search(catalog, "gpumode-matmul-v2 h100", now=now)
    assert r.status == "leaderboard_only"
    assert "23 on H100 (variant not recorded)" in r.message and "B200" not in r.message
    assert "/operations/gpumode-matmul-v2" in r.message
    other = search(catalog, "gpumode-matmul-v2 mi300x", now=now)
    assert "none on the GPU asked for" in other.message and "47 on B200" in other.message


def test_gemm_h100_offers_the_operations_with_h100_evidence_first(catalog: Catalog, now: datetime) -> None:
    """Once only GPU MODE's matmul had H100 evidence (leaderboard scores) and 'gemm h100' picked it; since
    2026-12-07 the 16 dense GEMMs have verified H100 runs, so the answer asks which, those with H100 runs first,
    the leaderboard among them with its scores counted."""
    r = search(catalog, "gemm h100", now=now)
    assert r.status == "choose_operation"
    with_h100 = [c for c in r.choices if c.on_gpu_runs]
    assert {c.slug for c in with_h100} >= {"gpumode-matmul-v2", "gemm-n4096-k4096"}
    assert list(r.choices[:len(with_h100)]) == with_h100  # listed first
    matmul = next(c for c in with_h100 if c.slug == "gpumode-matmul-v2")
    assert matmul.on_gpu_scores == matmul.on_gpu_runs > 0  # its H100 evidence is leaderboard scores
