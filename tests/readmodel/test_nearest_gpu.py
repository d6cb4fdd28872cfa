"""Issue 20 item 9: the nearest measured GPU prefers the same architecture, then verified over reported,
then fresher evidence, then the nearer datasheet bandwidth — and says why."""

from __future__ import annotations

from datetime import UTC, datetime

from kernelindex import registry
from kernelindex.readmodel.gaps import MeasuredGpu, nearest_gpu

GPUS = registry.gpus()
OLD, NEW = datetime(2024, 9, 3, tzinfo=UTC), datetime(2026, 11, 30, tzinfo=UTC)


def test_h100_falls_back_to_the_h200_not_the_nearer_bandwidth_a100() -> None:
    chosen, why = nearest_gpu(GPUS["h100-sxm"], [MeasuredGpu("a100-80gb", "reported", OLD),
                                                 MeasuredGpu("h200", "verified", NEW)])
    assert chosen.slug == "h200"
    assert "the same architecture as H100 (sm_90)" in why and "verified evidence observed 2026-11-30" in why


def test_then_evidence_then_freshness_then_bandwidth() -> None:
    b200 = GPUS["b200"]  # no sm_100 GPU among the candidates
    verified_old = MeasuredGpu("a100-80gb", "verified", OLD)
    reported_new = MeasuredGpu("h200", "reported", NEW)
    assert nearest_gpu(b200, [verified_old, reported_new])[0].slug == "a100-80gb"  # evidence before freshness
    assert "no GPU of B200's architecture (sm_100) has runs" in nearest_gpu(b200, [verified_old, reported_new])[1]
    fresh = MeasuredGpu("a100-80gb", "reported", NEW)
    stale = MeasuredGpu("h200", "reported", OLD)
    assert nearest_gpu(b200, [fresh, stale])[0].slug == "a100-80gb"  # freshness before bandwidth
    same = [MeasuredGpu("a100-80gb", "reported", OLD), MeasuredGpu("h200", "reported", OLD)]
    assert nearest_gpu(b200, same)[0].slug == "h200"  # 4,800 GB/s is nearer 8,000 than 2,039


def test_nothing_measured_elsewhere() -> None:
    assert nearest_gpu(GPUS["h200"], [MeasuredGpu("h200", "verified", NEW)]) is None


def test_another_vendors_part_is_never_the_nearest() -> None:
    """Issue 43 item 7: an operation only aiter measured (on AMD parts) offers no "nearest measured" GPU to an
    NVIDIA page, and an NVIDIA run is no stand-in for an AMD part."""
    amd = MeasuredGpu("mi300x-mi325x-variant-not-recorded", "reported", NEW)
    assert nearest_gpu(GPUS["h100-sxm"], [amd]) is None
    assert nearest_gpu(GPUS["mi355x-mi350x-variant-not-recorded"], [MeasuredGpu("h200", "verified", NEW)]) is None
    chosen, _ = nearest_gpu(GPUS["mi355x-mi350x-variant-not-recorded"], [amd, MeasuredGpu("h200", "verified", NEW)])
    assert chosen.slug == "mi300x-mi325x-variant-not-recorded"
