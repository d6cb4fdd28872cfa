"""Issue 20 item 1: the attainable bandwidth is the maximum over the ceiling kernels (copy, read-only,
write-only), over the sizes each was streamed at, and over the rates verified runs sustained (synthetic
figures on CPU; the runner's sweep with its CUDA kernels replaced)."""

from __future__ import annotations

import pytest
import torch

from kernelindex.policy.ceilings import CEILING_SIZES, CeilingFigure, best_seen, ceilings_over_sizes
from kernelindex.policy.floor import Attainable

MIB = 1 << 20


def _sweep() -> list[CeilingFigure]:
    # the copy is best at 4 GiB, the read at 256 MiB, the write at 64 MiB: each kernel's best size differs
    table = {"copy": (3.60e12, 3.90e12, 4.00e12, 4.05e12), "read": (4.10e12, 4.31e12, 4.20e12, 4.25e12),
             "write": (4.70e12, 4.60e12, 4.65e12, 4.62e12)}
    return [CeilingFigure(kernel, size, rate) for kernel, rates in table.items()
            for size, rate in zip(CEILING_SIZES, rates, strict=True)]


def test_each_kernel_keeps_its_best_size_and_the_best_kernel_bounds_every_mix() -> None:
    best = ceilings_over_sizes(_sweep())
    assert best is not None
    assert (best.copy, best.read, best.write) == (4.05e12, 4.31e12, 4.70e12)
    assert best.best == 4.70e12  # one bus: the fastest stream of any kind, at any size
    single = ceilings_over_sizes(f for f in _sweep() if f.bytes == 1 << 30)  # what one 1 GiB probe saw
    assert single is not None and single.best == 4.65e12 < best.best


def test_the_sizes_are_several_and_past_the_l2() -> None:
    assert len(CEILING_SIZES) >= 3 and min(CEILING_SIZES) >= 64 * MIB and (1 << 30) in CEILING_SIZES


def test_best_seen_takes_the_maximum_over_ceilings_and_verified_runs() -> None:
    ceilings = [Attainable(4.05e12, "copy"), Attainable(4.70e12, "write-only")]
    assert best_seen([*ceilings, Attainable(4.245e12, "verified run jsd", run_id="61d2e8d320a754e2")]) == ceilings[1]
    kl_div = Attainable(4.75e12, "verified run kl-div", run_id="0123456789abcdef")
    assert best_seen([*ceilings, kl_div]) == kl_div  # the run that set it, to link it
    tie = best_seen([Attainable(4.7e12, "first"), Attainable(4.7e12, "second")])
    assert tie is not None and tie.source == "first"
    assert best_seen([Attainable(0.0, "nothing moved")]) is None and best_seen([]) is None


def test_without_a_copy_figure_there_are_no_ceilings_and_unknown_kernels_are_refused() -> None:
    assert ceilings_over_sizes([CeilingFigure("read", 64 * MIB, 4e12)]) is None
    with pytest.raises(ValueError, match="unknown ceiling kernel 'triad'"):
        ceilings_over_sizes([CeilingFigure("triad", 64 * MIB, 4e12)])


def test_the_runner_sweeps_every_size_and_leaves_out_one_it_cannot_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelindex.runner import cuda

    def copy(device: object, nbytes: int, samples: int = 3) -> float:
        if nbytes > 1 << 30:
            raise torch.cuda.OutOfMemoryError("two 4 GiB buffers do not fit")
        return 4e12 + nbytes

    monkeypatch.setattr(cuda, "copy_bandwidth", copy)
    monkeypatch.setattr(cuda, "read_write_bandwidth", lambda device, nbytes, samples=3: (4.2e12, 4.6e12 + nbytes))
    figures = cuda.ceiling_sweep(object())  # type: ignore[arg-type]
    assert sorted({f.bytes for f in figures}) == [s for s in CEILING_SIZES if s <= 1 << 30]
    best = ceilings_over_sizes(figures)
    assert best is not None and best.write == 4.6e12 + (1 << 30) and best.copy == 4e12 + (1 << 30)


def test_the_environment_records_each_kernel_at_its_best_size_and_the_gpu_table_shows_it() -> None:
    from kernelindex.policy.ceilings import best_sizes
    from kernelindex.readmodel.ceilings import ceiling_rows
    from kernelindex.runner.environment import Probe, environment_manifest

    figures = _sweep()
    assert best_sizes(figures) == {"copy": 4 << 30, "read": 256 * MIB, "write": 64 * MIB}
    best = ceilings_over_sizes(figures)
    assert best is not None
    swept = environment_manifest(Probe("NVIDIA H200", "sm_90", 141 << 30, copy_bandwidth_bytes_per_s=best.copy,
                                       read_bandwidth_bytes_per_s=best.read, write_bandwidth_bytes_per_s=best.write,
                                       ceiling_bytes=best_sizes(figures)))
    assert swept.spec.ceiling_bytes == {"copy": 4 << 30, "read": 256 * MIB, "write": 64 * MIB}
    before = environment_manifest(Probe("NVIDIA H200", "sm_90", 141 << 30, copy_bandwidth_bytes_per_s=4.0e12,
                                        write_bandwidth_bytes_per_s=4.65e12))
    # absent from the canonical form: environments from before the sweep keep their digests
    assert before.spec.ceiling_bytes is None
    assert "ceiling_bytes" not in before.model_dump(mode="json", exclude_none=True)["spec"]
    rows = {r.kernel: r for r in ceiling_rows([before, swept], 4800, "datasheet", None)}
    write = rows["write-only: fill a buffer"]
    assert (write.best_bytes_per_s, write.bytes_read, write.bytes_written) == (4.70e12, 0, 64 * MIB)
    only_before = {r.kernel: r for r in ceiling_rows([before], 4800, "datasheet", None)}
    assert only_before["write-only: fill a buffer"].bytes_written == 1 << 30  # the single 1 GiB probe


def test_the_gpu_table_shows_the_ceiling_gemm_and_which_compute_floor_uses_it() -> None:
    from kernelindex.readmodel.ceilings import (
        BELOW_BEST_USE,
        COMPUTE_ATTAINABLE_USE,
        COMPUTE_PHYSICAL_USE,
        GEMM_CEILING_KERNEL,
        compute_ceiling_rows,
    )
    from kernelindex.runner.environment import Probe, environment_manifest

    def env(flops: float | None):  # noqa: ANN202 - an ExecutionEnvironment
        return environment_manifest(Probe("NVIDIA H200", "sm_90", 141 << 30, copy_bandwidth_bytes_per_s=4.0e12,
                                          fp16_gemm_flops_per_s=flops))

    assert compute_ceiling_rows([env(None)], 989.5, "datasheet", None) == []  # before the ceiling GEMM: no rows
    ceiling = Attainable(4.0e12, "copy", compute_flops_per_s=741e12, compute_source="the ceiling GEMM")
    rows = compute_ceiling_rows([env(741e12), env(702e12), env(None)], 989.5, "datasheet", ceiling)
    assert [(r.kernel, r.best_flops_per_s, r.lowest_flops_per_s, r.measurements, r.used_by) for r in rows] == [
        (GEMM_CEILING_KERNEL, 741e12, 702e12, 2, COMPUTE_ATTAINABLE_USE),
        ("datasheet fp16 dense peak — datasheet", 989.5e12, None, 0, COMPUTE_PHYSICAL_USE)]
    # a verified GEMM run faster than the ceiling sets the attainable rate: its own row, first
    faster = Attainable(4.0e12, "copy", compute_flops_per_s=760e12, compute_source="verified run abc (gemm)",
                        compute_run_id="abcdef0123456789")
    rows = compute_ceiling_rows([env(741e12)], 989.5, "datasheet", faster)
    assert [(r.kernel, r.used_by, r.run_url) for r in rows] == [
        ("verified run abc (gemm)", COMPUTE_ATTAINABLE_USE, "/runs/abcdef0123456789"),
        (GEMM_CEILING_KERNEL, BELOW_BEST_USE, None),
        ("datasheet fp16 dense peak — datasheet", COMPUTE_PHYSICAL_USE, None)]
