"""A GPU's bandwidth ceilings in one compact table (issue 22 item 6): for each ceiling kernel a
KernelIndex runner times on it — device-to-device copy, read-only, write-only — the bytes one call moves,
the best and the range over every environment that measured it, and which floor uses it; beside them
the datasheet peak (the physical floor) and, when a verified run moved its bytes faster than every
ceiling, that run (the attainable floor then divides by its rate: readmodel/attainable.py). Below them, the
compute ceiling: the 16-bit GEMM a runner times (8192³ fp16, cuBLAS), which the attainable compute floor of a
16-bit GEMM divides by, beside the datasheet's fp16 dense peak."""

from __future__ import annotations

from dataclasses import dataclass

from kernelindex import urls
from kernelindex.domain.manifests import ExecutionEnvironment
from kernelindex.policy.floor import CEILING_PROBE_BYTES, Attainable
from kernelindex.readmodel.jsonable import JsonModel

# (environment field, kernel in words, reads its buffer, writes it, key in the environment's ceiling_bytes)
KERNELS = (
    ("write_bandwidth_bytes_per_s", "write-only: fill a buffer", False, True, "write"),
    ("copy_bandwidth_bytes_per_s", "device-to-device copy", True, True, "copy"),
    ("read_bandwidth_bytes_per_s", "read-only: sum each 64 KiB row", True, False, "read"),
)
ATTAINABLE_USE = "the attainable floor (the best bandwidth seen on this GPU)"
PHYSICAL_USE = "the physical floor (datasheet; no correct run beats it)"
BELOW_BEST_USE = "none on the pages: below the best seen"
GEMM_CEILING_KERNEL = "16-bit GEMM: torch.matmul (cuBLAS), 8192 × 8192 × 8192 fp16"
COMPUTE_ATTAINABLE_USE = "the attainable compute floor of 16-bit GEMMs (the best GEMM rate seen on this GPU)"
COMPUTE_PHYSICAL_USE = "the physical compute floor of 16-bit GEMMs (datasheet; no correct run beats it)"


@dataclass
class CeilingRow(JsonModel):
    kernel: str
    bytes_read: int | None
    bytes_written: int | None
    best_bytes_per_s: float
    lowest_bytes_per_s: float | None  # over every environment that measured it (None: one figure only)
    measurements: int  # environments (a runner's machine and software) that measured it
    used_by: str  # which floor divides by it
    run_url: str | None = None  # the verified run's page, when a run set this rate


def ceiling_rows(environments: list[ExecutionEnvironment], bandwidth_gbps: float, source: str,
                 attainable: Attainable | None) -> list[CeilingRow]:
    """The ceilings of one GPU's environments, best first, then the datasheet peak; a verified run that
    set the attainable bandwidth above every ceiling is its own row."""
    rows = []
    for field, kernel, reads, writes, key in KERNELS:
        measured = [(v, e) for e in environments if (v := getattr(e.spec, field))]
        if not measured:
            continue
        values = [v for v, _ in measured]
        best, low = max(values), min(values)
        # the buffer the best figure streamed: its size in the sweep (policy/ceilings), 1 GiB before the sweep
        size = (next(e for v, e in measured if v == best).spec.ceiling_bytes or {}).get(key, CEILING_PROBE_BYTES)
        read, written = size if reads else 0, size if writes else 0
        used = ATTAINABLE_USE if attainable and best == attainable.bandwidth_bytes_per_s else BELOW_BEST_USE
        rows.append(CeilingRow(kernel, read, written, best, low if low != best else None, len(values), used))
    rows.sort(key=lambda r: -r.best_bytes_per_s)
    if attainable and not any(r.used_by == ATTAINABLE_USE for r in rows):
        rows.insert(0, CeilingRow(attainable.source, None, None, attainable.bandwidth_bytes_per_s, None, 1,
                                  ATTAINABLE_USE, _run_url(attainable.run_id)))
    rows.append(CeilingRow(f"datasheet HBM peak — {source}", None, None, bandwidth_gbps * 1e9, None, 0, PHYSICAL_USE))
    return rows


@dataclass
class ComputeCeilingRow(JsonModel):
    kernel: str
    best_flops_per_s: float
    lowest_flops_per_s: float | None  # over every environment that measured it (None: one figure only)
    measurements: int  # environments that measured it (0: the datasheet)
    used_by: str
    run_url: str | None = None  # the verified GEMM run's page, when a run set this rate


def compute_ceiling_rows(environments: list[ExecutionEnvironment], peak_tflops_fp16: float | None, source: str,
                         attainable: Attainable | None) -> list[ComputeCeilingRow]:
    """The ceiling GEMM over the environments that measured it (none measured: no rows), a verified GEMM run
    that set the attainable rate above it as its own row, and the datasheet's fp16 dense peak."""
    values = [v for e in environments if (v := e.spec.fp16_gemm_flops_per_s)]
    if not values:
        return []
    best, low = max(values), min(values)
    attained = attainable.compute_flops_per_s if attainable else None
    used = COMPUTE_ATTAINABLE_USE if attained == best else BELOW_BEST_USE
    rows = [ComputeCeilingRow(GEMM_CEILING_KERNEL, best, low if low != best else None, len(values), used)]
    if attainable and attained and used != COMPUTE_ATTAINABLE_USE:
        rows.insert(0, ComputeCeilingRow(attainable.compute_source, attained, None, 1, COMPUTE_ATTAINABLE_USE,
                                         _run_url(attainable.compute_run_id)))
    if peak_tflops_fp16:
        rows.append(ComputeCeilingRow(f"datasheet fp16 dense peak — {source}", peak_tflops_fp16 * 1e12, None, 0,
                                      COMPUTE_PHYSICAL_USE))
    return rows


def _run_url(run_id: str) -> str | None:
    return urls.run(run_id) if run_id else None
