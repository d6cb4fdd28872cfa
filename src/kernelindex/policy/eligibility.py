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
    elif facts.median_ns <= 0:
        # Validation refuses these now; catalogs published before it did may still hold them.
        sentence = f"The run's median latency ({facts.median_ns} ns) is not a positive time."
        reasons.append(Reason("NON_POSITIVE_MEDIAN", sentence))
    return Eligibility(eligible=not reasons, reasons=tuple(reasons))


CORRECTION_REASONS = frozenset({"RETRACTED", "SUPERSEDED"})


def eligible_apart_from_corrections(result: Eligibility) -> bool:
    """Record history replays corrections at their own time, so it walks the runs whose only
    obstacles (if any) are a retraction or a supersession."""
    return all(reason.code in CORRECTION_REASONS for reason in result.reasons)
