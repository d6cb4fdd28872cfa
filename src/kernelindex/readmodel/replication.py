"""Replicated evidence made visible: which other trusted runners measured the same implementation
revision, workload and GPU, and whether their medians agree (within 5%) or disagree.

A disagreement is shown with both figures ("runners disagree: 25.4 vs 28.9 µs"), never averaged."""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelindex.domain.units import format_duration
from kernelindex.policy.evidence import REPLICATION_AGREEMENT
from kernelindex.readmodel.jsonable import JsonModel


@dataclass
class ReplicationPeer(JsonModel):
    run_id: str
    runner: str
    runner_key_id: str
    median_ns: int
    agrees: bool


@dataclass
class Replication(JsonModel):
    """``state``: ``replicated`` (every peer agrees), ``disagree`` (some peer is beyond 5%)."""

    state: str
    runner: str
    median_ns: int
    peers: list[ReplicationPeer] = field(default_factory=list)
    sentence: str = ""


def replication_of(runner: str, median_ns: int, peers: list[ReplicationPeer]) -> Replication | None:
    """The replication summary of one verified run, or None when no other trusted runner measured it."""
    if not peers:
        return None
    disagreeing = [p for p in peers if not p.agrees]
    state = "disagree" if disagreeing else "replicated"
    return Replication(state, runner, median_ns, peers, _sentence(state, runner, median_ns, peers, disagreeing))


def _sentence(state: str, runner: str, median_ns: int, peers: list[ReplicationPeer],
              disagreeing: list[ReplicationPeer]) -> str:
    limit = f"{REPLICATION_AGREEMENT:.0%}"
    if state == "disagree":
        figures = " vs ".join(format_duration(v) for v in [median_ns, *(p.median_ns for p in disagreeing)])
        names = ", ".join([runner, *(p.runner for p in disagreeing)])
        return (f"Runners disagree: {figures} ({names}); more than {limit} apart, so each figure stands on "
                "its own and nothing is averaged.")
    others = ", ".join(f"{p.runner} {format_duration(p.median_ns)}" for p in peers)
    return f"Replicated: {runner} {format_duration(median_ns)} and {others} agree within {limit}."
