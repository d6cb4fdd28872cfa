"""Eligibility: the single rule deciding whether a run can be ranked and counted."""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelindex.policy.reasons import Reason

# No kernel call takes an hour: a larger stored latency is damaged or foreign data, not a measurement.
MAX_PLAUSIBLE_LATENCY_NS = 3_600 * 10**9


@dataclass(frozen=True)
class SampleCount:
    """How many samples a run took against its protocol's minimum (``repetitions.count``; a run that
    declares its own minimum, as runner v3 does, is held to that), and why it stopped, when it says."""

    taken: int | None
    minimum: int | None
    stop_reason: str | None = None
    declared: bool = False  # the run itself says it is under-sampled (runner v3's timing.under_sampled)

    @property
    def under_sampled(self) -> bool:
        return self.declared or (self.taken is not None and self.minimum is not None and self.taken < self.minimum)


@dataclass(frozen=True)
class EligibilityFacts:
    status: str
    published: bool
    retracted: bool
    superseded: bool
    median_ns: int | None
    samples: SampleCount | None = None  # None: no sample minimum applies (a leaderboard score)
    # Why the stored run's values cannot be used (``stored_latency_problems`` and what validating
    # the stored manifest refused); empty when they are sound.
    invalid_stored: tuple[str, ...] = ()
    # The physical floor (datasheet peaks) of the run's region on its GPU, where one is known: no
    # correct run beats it, so a median under it is implausible (a 1 ns cross-entropy row).
    physical_floor_ns: float | None = None


@dataclass(frozen=True)
class Eligibility:
    eligible: bool
    reasons: tuple[Reason, ...] = field(default_factory=tuple)


def stored_latency_problems(column_ns: int | None, manifest_ns: int | None) -> tuple[str, ...]:
    """What makes a stored latency unusable besides what validating its manifest refused: the typed
    column (what is ranked) and the manifest (what is shown) disagree, or the value is beyond any
    kernel call. Readers take a catalog as they find it: an old or damaged one may hold either."""
    problems = []
    if column_ns != manifest_ns:
        stored = "no value" if column_ns is None else f"{column_ns} ns"
        manifest = "no value" if manifest_ns is None else f"{manifest_ns} ns"
        problems.append(f"its ranked latency column holds {stored} but its manifest says {manifest}")
    for value in sorted({v for v in (column_ns, manifest_ns) if v is not None and v > MAX_PLAUSIBLE_LATENCY_NS}):
        problems.append(f"a median latency of {value} ns is over an hour per call, not a kernel measurement")
    return tuple(problems)


def eligibility(facts: EligibilityFacts) -> Eligibility:
    """A run is ranked and counted only when its stored values are sound, it passed, is published,
    is neither retracted nor superseded, has a positive median and took its protocol's minimum
    samples; otherwise every failing condition is given as a reason."""
    reasons: list[Reason] = []
    if facts.invalid_stored:
        sentence = f"The stored run is invalid: {'; '.join(facts.invalid_stored)}. An operator should retract it."
        reasons.append(Reason("INVALID_STORED_VALUE", sentence))
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
    if facts.samples is not None and facts.samples.under_sampled:
        reasons.append(under_sampled_reason(facts.samples))
    if facts.median_ns is not None and facts.median_ns > 0 and facts.physical_floor_ns is not None \
            and facts.median_ns < facts.physical_floor_ns:
        reasons.append(Reason("UNDER_PHYSICAL_FLOOR", f"The median ({facts.median_ns:,} ns) is under the physical "
                              f"floor ({facts.physical_floor_ns:,.0f} ns: the compulsory bytes and FLOPs at the "
                              "datasheet's peaks), which no correct run beats: implausible, so flagged and never "
                              "ranked."))
    return Eligibility(eligible=not reasons, reasons=tuple(reasons))


def under_sampled_reason(samples: SampleCount) -> Reason:
    stopped = f" The run stopped at: {samples.stop_reason}." if samples.stop_reason else ""
    counted = "?" if samples.taken is None else samples.taken
    of = f" of {samples.minimum} samples, the protocol's minimum." if samples.minimum is not None else " samples."
    return Reason("UNDER_SAMPLED", f"Under-sampled: {counted}{of}{stopped} A median of fewer samples is neither "
                  "ranked nor a record.")


CORRECTION_REASONS = frozenset({"RETRACTED", "SUPERSEDED"})


def eligible_apart_from_corrections(result: Eligibility) -> bool:
    """Record history replays corrections at their own time, so it walks the runs whose only
    obstacles (if any) are a retraction or a supersession."""
    return all(reason.code in CORRECTION_REASONS for reason in result.reasons)
