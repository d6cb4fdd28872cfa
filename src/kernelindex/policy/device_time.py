"""Runner protocol v3's rules on device time: when a call is host-bound on the host that measured it, and
when the graph-replay cross-check agrees with the device time. The one place each is decided (the
runner records them as ``timing.host.bound`` and ``timing.cross_check.agrees``; pages say them in words)."""

from __future__ import annotations

from typing import Any

HOST_BOUND_RATIO = 1.2  # wall time per call over device time per call


def is_host_bound(wall_ns: float, device_ns: float) -> bool:
    """Wall time per call (back-to-back calls) exceeds the device time by more than 20%."""
    return wall_ns > device_ns * HOST_BOUND_RATIO


def host_bound_words(wall_ns: float, syncs_per_call: float, device_ns: float, figure: str = "device time") -> str:
    """The label for a host-bound run, as its row and run page show it (``figure``: what its median is)."""
    return (f"host-bound on this host: {wall_ns / 1000:.1f} µs per call wall time, "
            f"{syncs_per_call:g} syncs per call; {figure} {device_ns / 1000:.2f} µs")


CROSS_CHECK_MIN_NS = 20_000  # calls shorter than this: the graph replay's own overhead is a visible share
CROSS_CHECK_TOLERANCE = 0.05


def cross_check_agrees(device_ns: float, check_ns: float, capturable: bool) -> bool | None:
    """Whether the graph-replay time agrees with the device time (within 5%); None where the protocol
    requires no agreement: a call that cannot be captured, or one under 20 µs of device time."""
    if not capturable or device_ns < CROSS_CHECK_MIN_NS:
        return None
    return abs(check_ns / device_ns - 1.0) <= CROSS_CHECK_TOLERANCE


DEVICE_TIME = "cupti-device-time"  # runner v3's timing.method: the median is the call's device time
STREAM_TIME = "stream-time"  # runner v4's: the median is the call's stream time


def timing_statistic(method: str | None) -> str:
    """What a runner's median is, for comparing runs: "stream" (v4), "device" (v3) or "" (graph replay, events,
    a source's own timer). Runs of different statistics never confirm or rank against each other."""
    return {STREAM_TIME: "stream", DEVICE_TIME: "device"}.get(method or "", "")


def protocol_version(protocol: Any) -> str:
    """The harness version of a runner protocol ("" for a source's own harness)."""
    return "" if protocol.native else str(protocol.harness.version or "")
