"""A GPU's datasheet facts: what the floor estimate and the GPU pages need to know about a product.

The table itself (``registry/gpus.yaml``) is data the package ships; this is its shape, which the
pure policy functions take as input."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class GpuDatasheet:
    """What the datasheet says of a product (its GPU page and every answer naming a GPU show these)."""

    slug: str
    name: str
    short: str
    vendor: str
    architecture: str
    memory_gb: float
    form_factor: str
    bandwidth_gbps: float
    peaks_tflops: dict[str, float]
    source: str

    def datasheet(self) -> dict[str, Any]:
        """The datasheet's fields alone, to build another object of the same product from."""
        return {f.name: getattr(self, f.name) for f in fields(GpuDatasheet)}


@dataclass(frozen=True)
class GpuSpec(GpuDatasheet):
    """A product of the table: its datasheet, and the names a source or a query may give it."""

    match: tuple[str, ...]
    # For a product a source named without its variant ("NVIDIA H100"): the variants it may be.
    # A request for any of them reaches its runs; they still rank only in their own cohort.
    variant_of: tuple[str, ...] = ()
    # The stream time of the shortest call a KernelIndex runner measured on this product under protocol v4
    # (``registry/measured_ceilings.yaml``): the latency term of every floor on it. None: never measured.
    min_call_ns: float | None = None

    @property
    def bandwidth_bytes_per_s(self) -> float:
        return self.bandwidth_gbps * 1e9

