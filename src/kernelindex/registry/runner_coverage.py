"""What the registry says of the runner's reach: operations it cannot verify or has not yet
(runner_coverage.yaml), and implementation lines whose forward also does the backward's work
(region_work.yaml)."""

from __future__ import annotations

from functools import cache

from kernelindex.registry.documents import load_yaml


@cache
def runner_unavailable() -> dict[str, str]:
    """Operations the runner cannot verify → the reason (``runner_coverage.yaml``)."""
    return dict(load_yaml("runner_coverage.yaml").get("unavailable") or {})


@cache
def runner_pending() -> dict[str, str]:
    """Operations the runner can verify but that have no shipped verified runs yet → why not."""
    return dict(load_yaml("runner_coverage.yaml").get("pending") or {})


@cache
def forward_computes_gradient() -> dict[str, str]:
    """Implementation lines whose forward also computes the gradient → how, in words (``region_work.yaml``)."""
    return dict(load_yaml("region_work.yaml").get("forward_computes_gradient") or {})


@cache
def kernelbench_pending() -> dict[int, str]:
    """KernelBench level → why problems of its newest set have no verified run yet (``runner_coverage.yaml``)."""
    pending = load_yaml("runner_coverage.yaml").get("kernelbench_pending") or {}
    return {int(level): str(why) for level, why in pending.items()}


@cache
def kernelbench_protocol_note() -> str:
    """What a reader of the KernelBench campaign's verified runs must know of how they were measured, every level
    alike ("" when nothing); /challenges shows it under the levels (``runner_coverage.yaml``)."""
    return str(load_yaml("runner_coverage.yaml").get("kernelbench_protocol_note") or "")


@cache
def protocol_notes() -> dict[str, str]:
    """Protocol digest → what its own signed text does not say of how its runs were measured (a protocol is never
    edited: the correction sits beside it, on every run page of it; ``runner_coverage.yaml``)."""
    return {str(k): str(v) for k, v in (load_yaml("runner_coverage.yaml").get("protocol_notes") or {}).items()}


@cache
def unbuilt_implementations() -> dict[str, dict[str, str]]:
    """Implementations the runner tried to bring to its GPU machine and could not → {"title", "operations" (what
    they would run on), "reason" (a measured account)}; /challenges lists them (``runner_coverage.yaml``)."""
    found = load_yaml("runner_coverage.yaml").get("unbuilt_implementations") or {}
    return {str(k): {f: str(v.get(f, "")) for f in ("title", "operations", "reason")} for k, v in found.items()}


def why_not_verified(slug: str) -> str | None:
    """The stated reason an operation has no verified runs, when the registry states one."""
    return runner_unavailable().get(slug) or runner_pending().get(slug)
