"""Issue 20 item 8: the call's peak memory counts what it hands back, even when that was allocated
before the call and kept (/runs/fdb43a1525427b33: tvd backward reported 0 bytes where 8.6 GB must be
written); an in-place call still says 0."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from kernelindex.runner.memory import peak_with_kept_results, result_storage_bytes  # noqa: E402


def test_a_call_that_allocates_n_bytes_reports_at_least_n() -> None:
    n = 1 << 20
    out = torch.empty(n // 4, dtype=torch.float32)
    # allocated during the call: the held memory grew by n, the result holds n
    assert peak_with_kept_results(n, n, result_storage_bytes(out)) >= n


def test_a_result_allocated_before_the_call_and_kept_is_counted() -> None:
    saved_gradient = torch.empty(2048, dtype=torch.float32)  # computed by the forward, returned by the backward
    result = {"p": saved_gradient.mul_(1.0)}  # in place on the kept tensor: 0 new bytes
    assert peak_with_kept_results(0, 0, result_storage_bytes(result)) == 2048 * 4


def test_an_in_place_call_on_its_inputs_still_says_zero() -> None:
    q = torch.ones(1024)
    result = (q.mul_(2.0),)
    assert result_storage_bytes(result, [q]) == 0
    assert peak_with_kept_results(0, 0, result_storage_bytes(result, [q])) == 0


def test_views_of_one_storage_count_once() -> None:
    base = torch.empty(1000, dtype=torch.float64)
    assert result_storage_bytes([base[:10], base[10:], base]) == 8000


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_peak_of_a_kept_gradient_and_of_a_fresh_allocation() -> None:
    from kernelindex.runner.cuda import CudaDevice

    device = CudaDevice(calls_per_sample=1)
    n = 256 << 20
    kept = torch.empty(n // 4, device="cuda")
    assert device.peak_memory_bytes(lambda: kept.mul_(1.0)) >= n  # returns what the "forward" kept
    assert device.peak_memory_bytes(lambda: torch.empty(n // 4, device="cuda")) >= n
    x = torch.ones(n // 4, device="cuda")
    assert device.peak_memory_bytes(lambda: x.mul_(2.0), [x]) == 0


def test_shipped_zero_peaks_are_not_shown_as_a_fact(catalog) -> None:  # noqa: ANN001 - the bundled catalog
    """/runs/fdb43a1525427b33 (tvd backward, 8 x 2048 x 131,072 fp32) recorded a 0-byte peak with the old
    measurement: its page says the figure is unknown and why, never '0 bytes'."""
    from datetime import UTC, datetime

    from kernelindex.readmodel.runs import run_dossier

    dossier = run_dossier(catalog, "fdb43a1525427b33", now=datetime(2026, 12, 1, tzinfo=UTC))
    peak = next(f for f in dossier.secondary if f["key"] == "peak_memory_bytes")
    assert peak["value"] is None and "0 is not a fact" in peak["note"]
