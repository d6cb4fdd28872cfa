"""Runner protocol v3's fields of a run's timing (docs: runner.md, "Protocol v3 fields"): the span and
syncs from the trace, the cross-check and whether it agrees, the host cost and whether the call is
host-bound, and whether the run has the protocol's minimum samples. Pure Python: tested with fakes."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from kernelindex.policy.device_time import cross_check_agrees, is_host_bound
from kernelindex.runner.timing import Measurement

DEVICE_TIME_METHOD = "cupti-device-time"
STREAM_TIME_METHOD = "stream-time"


@dataclass(frozen=True)
class CrossCheckResult:
    method: str  # cuda_graph_replay | per_call_events
    median_ns: float
    capture_failure: str | None = None


def under_sampled(samples: int, min_samples: int, stop_reason: str) -> str | None:
    """Why a run has fewer samples than the protocol's minimum, or None when it has enough."""
    if samples >= min_samples:
        return None
    why = stop_reason or "no reason recorded"
    return f"{samples} samples, fewer than the protocol's minimum of {min_samples}: stopped at {why}"


def cross_check_json(device_ns: float, check: CrossCheckResult) -> dict[str, Any]:
    agrees = cross_check_agrees(device_ns, check.median_ns, capturable=check.method == "cuda_graph_replay")
    data: dict[str, Any] = {"method": check.method, "median_ns": max(1, round(check.median_ns))}
    if agrees is not None:
        data["agrees"] = agrees
    ratio = f"graph/device {check.median_ns / device_ns:.3f}" if device_ns > 0 else ""
    detail = "; ".join(part for part in (check.capture_failure, ratio) if part)
    if detail:
        data["detail"] = detail[:300]
    return data


def host_json(m: Measurement, device_ns: float, wall_ns: float, cpu_ns: float) -> dict[str, Any]:
    syncs = statistics.median(a.syncs for a in m.activities) if m.activities else 0.0
    copies = statistics.median(a.device_to_host_copies for a in m.activities) if m.activities else 0.0
    return {"wall_ns": max(1, round(wall_ns)), "cpu_ns": round(cpu_ns), "syncs_per_call": float(syncs),
            "device_to_host_copies_per_call": float(copies), "bound": is_host_bound(wall_ns, device_ns)}


def v3_fields(m: Measurement, min_samples: int, check: CrossCheckResult | None,
              host_cost: tuple[float, float] | None) -> dict[str, Any]:
    """The v3 keys to merge into a run's timing (a device-time or, v4, a stream-time measurement; for v4 the
    cross-check and the host-bound rule compare with the stream time)."""
    if m.method not in (DEVICE_TIME_METHOD, STREAM_TIME_METHOD):  # v4 keeps v3's self-checks beside its figure
        return {}
    device_ns = statistics.median(m.samples)
    fields: dict[str, Any] = {"min_samples": min_samples}
    if m.activities:
        fields["span_median_ns"] = round(statistics.median(a.span_ns for a in m.activities))
    if check is not None:
        fields["cross_check"] = cross_check_json(device_ns, check)
    if host_cost is not None:
        fields["host"] = host_json(m, device_ns, *host_cost)
    reason = under_sampled(len(m.samples), min_samples, m.stop_reason)
    if reason is not None:
        fields["under_sampled"] = reason
    return fields
