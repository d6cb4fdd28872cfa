"""A GPU's datasheet facts: what the floor estimate and the GPU pages need to know about a product.

The table itself (``registry/gpus.yaml``) is data the package ships; this is its shape, which the
pure policy functions take as input."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuSpec:
    slug: str
    name: str
    short: str
    vendor: str
    architecture: str
    memory_gb: float
    form_factor: str
    match: tuple[str, ...]
    bandwidth_gbps: float
    peaks_tflops: dict[str, float]
    source: str
    # For a product a source named without its variant ("NVIDIA H100"): the variants it may be.
    # A request for any of them reaches its runs; they still rank only in their own cohort.
    variant_of: tuple[str, ...] = ()

    @property
    def bandwidth_bytes_per_s(self) -> float:
        return self.bandwidth_gbps * 1e9

