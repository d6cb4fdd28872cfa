"""Each GPU's bandwidth ceilings as its runner measured them under protocol v4 (``measured_ceilings.yaml``, written
by ``ki runner campaign ceilings`` from the shipped bundles' environments): every ceiling kernel at every size, and
the shortest call's stream time. A run whose own environment carries no table (older protocols) is checked against
its GPU's (``readmodel/ceiling_checks``)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from kernelindex.registry.documents import RegistryError, load_yaml

KERNELS = ("copy", "read", "write")


@dataclass(frozen=True)
class MeasuredCeilings:
    product: str  # the GPU product exactly as the runner's machine reported it
    environment: str  # the digest of the environment that recorded them
    bundle: str  # the shipped bundle that carried that environment
    table: tuple[tuple[str, int, float], ...]  # (kernel, bytes, bytes read + written per second)
    min_call_ns: float | None


def _entry(product: str, data: dict) -> MeasuredCeilings:
    rows = []
    for row in data.get("ceilings") or []:
        kernel, size, rate = row
        if kernel not in KERNELS or int(size) <= 0 or float(rate) <= 0:
            raise RegistryError(f"measured_ceilings.yaml: {product}: bad ceiling row {row!r} "
                                f"(a kernel of {', '.join(KERNELS)}, bytes > 0, bytes/s > 0)")
        rows.append((str(kernel), int(size), float(rate)))
    minimum = data.get("min_call_ns")
    return MeasuredCeilings(product, str(data["environment"]), str(data["bundle"]), tuple(rows),
                            float(minimum) if minimum is not None else None)


@cache
def measured_ceilings() -> dict[str, MeasuredCeilings]:
    """GPU product → the latest v4 ceilings measured on it (empty before any v4 campaign)."""
    gpus = load_yaml("measured_ceilings.yaml").get("gpus") or {}
    return {product: _entry(product, data) for product, data in gpus.items()}
