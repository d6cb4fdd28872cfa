"""The runner's ceiling GEMM (issue 25 item 2) in the environment it records: rounded to 1 TFLOP/s, and absent
(not null) where it was not measured, so environments recorded before it keep their digests. The
measurement itself needs a CUDA GPU (skipped cleanly without one)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from kernelindex.domain.manifests import digest_of  # noqa: E402
from kernelindex.runner.environment import Probe, environment_manifest  # noqa: E402


def _probe(gemm: float | None) -> Probe:
    return Probe("NVIDIA H200", "sm_90", 150_000_000_000, {"torch": "2.11.0"}, {}, 4.3e12, 4.6e12, 4.5e12,
                 fp16_gemm_flops_per_s=gemm)


def test_the_ceiling_gemm_is_stored_rounded_and_absent_when_not_measured() -> None:
    measured = environment_manifest(_probe(743.4e12))
    assert measured.spec.fp16_gemm_flops_per_s == 743e12
    before = environment_manifest(_probe(None))
    assert "fp16_gemm_flops_per_s" not in before.model_dump(mode="json", exclude_none=True)["spec"]
    assert digest_of(before) != digest_of(measured)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_the_ceiling_gemm_runs_under_the_datasheet_peak() -> None:
    from kernelindex.runner.cuda import CudaDevice, gemm_ceiling

    rate = gemm_ceiling(CudaDevice(), size=4096, samples=1)
    assert 1e12 < rate < 2.5e15
