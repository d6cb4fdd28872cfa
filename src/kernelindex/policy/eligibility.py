"""Eligibility: the single rule deciding whether a run can be ranked and counted."""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelindex.policy.reasons import Reason


@dataclass(frozen=True)
class EligibilityFacts:
    status: str
    published: bool
    retracted: bool
    superseded: bool
    median_ns: int | None


@dataclass(frozen=True)
class Eligibility:
    eligible: bool
    reasons: tuple[Reason, ...] = field(default_factory=tuple)


def eligibility(facts: EligibilityFacts) -> Eligibility:
    """A run is ranked and counted only when it passed, is published, is neither retracted nor
    superseded, and has a median; otherwise every failing condition is given as a reason."""
    reasons: list[Reason] = []
    if facts.status != "passed":
        reasons.append(Reason("STATUS_NOT_PASSED", f"Status is {facts.status.replace('_', ' ')}, not passed."))
    if not facts.published:
        reasons.append(Reason("NOT_PUBLISHED", "The run is not published."))
    if facts.retracted:
        reasons.append(Reason("RETRACTED", "The run was retracted."))
    if facts.superseded:
        reasons.append(Reason("SUPERSEDED", "A newer run supersedes this one."))
    if facts.median_ns is None:
        reasons.append(Reason("NO_PRIMARY_VALUE", "The run has no median latency."))
    return Eligibility(eligible=not reasons, reasons=tuple(reasons))
