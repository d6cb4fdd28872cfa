"""The operation page's headline: fastest usable, best usable, fastest verified, language leaders, floor."""

from __future__ import annotations

from collections.abc import Mapping

from kernelindex import registry
from kernelindex.domain.units import format_duration
from kernelindex.policy.evidence import LEVEL_ORDER, VERIFIED_LEVELS
from kernelindex.policy.evidence import SENTENCES as EVIDENCE_SENTENCES
from kernelindex.policy.ratios import ratio
from kernelindex.readmodel.cohorts import Cohort
from kernelindex.readmodel.floors import cohort_floors, run_floors
from kernelindex.readmodel.labels import (
    Shown,
    cohort_key_short,
    cohort_label,
    gpu_label,
    tell_apart,
    told,
)
from kernelindex.readmodel.loading import OperationData
from kernelindex.readmodel.operation_select import pick_default
from kernelindex.readmodel.operation_views import FloorView, HeadlineSlot, LanguageLeader, RankedRow
from kernelindex.readmodel.ranking_notes import ranked_statistic_short
from kernelindex.readmodel.region_work import skips_floor_traffic
from kernelindex.readmodel.rows import RowsOf, ranked_only

REGION_FLOOR_WORDS = {
    "forward": "every input read once and every output written once (gathers count only the rows that can be touched)",
    "backward": "the upstream gradients and the inputs the backward needs read once, every gradient written once "
                "(saved intermediates are not compulsory)",
    "forward+backward": "every input and upstream gradient read once, every output and gradient written once",
    "forward-no-grad": "as forward (the call runs under torch.no_grad(), so no gradient is compulsory): every "
                       "input read once and every output written once",
}


def headline_slots(
    data: OperationData, cohort: Cohort, all_cohorts: Mapping[str, Cohort], rows_of: RowsOf
) -> list[HeadlineSlot]:
    """Every card names its GPU and timed region in its title, and compares like with like: a card titled
    "Fastest …" holds the fastest eligible run of its evidence (or stronger) for the workload among the
    cohorts of the same region, statistic and GPU (issue 43 item 2), else the selected cohort's first row is
    called its leader. Rows that do another region's work are never a card (item 5)."""
    rows = ranked_only(rows_of(cohort))
    if not rows:
        return []
    label = cohort_label(data.environments[cohort.environment], data.protocols[cohort.protocol])
    where = _where(data, cohort)
    leader = rows[0]
    first = "Fastest" if _is_fastest(data, cohort, leader, all_cohorts) else "Leader of this cohort ·"
    slots = []
    if leader.implementation.usable:
        slots.append(_slot("fastest_usable", f"{first} {leader.evidence} · usable today · {where}", leader, None,
                           cohort, label))
    else:
        best_usable = next((r for r in rows if r.implementation.usable), None)
        if best_usable:
            multiple = ratio(best_usable.median_ns, leader.median_ns)
            slots.append(_slot("best_usable", f"Best usable · {where}", best_usable, multiple, cohort, label))
        title = f"{first} {leader.evidence} · {leader.implementation.availability} · {where}"
        slots.append(_slot("fastest_not_usable", title, leader, None, cohort, label))
    shown = [cohort] * len(slots)
    verified = _fastest_verified(data, cohort, all_cohorts, rows_of)
    if verified and verified[0].row.digest != leader.digest:
        slots.append(verified[0])
        shown.append(verified[1])
    # Cards that would read alike (the same GPU and region measured by two runners) name what tells them apart.
    distinctions = tell_apart([Shown(s.cohort_label, c.runner, c.protocol) for s, c in zip(slots, shown, strict=True)])
    for slot, distinction in zip(slots, distinctions, strict=True):
        slot.cohort_label = told(slot.cohort_label, distinction)
    return slots


def _where(data: OperationData, cohort: Cohort) -> str:
    """The GPU and timed region a card's figure was measured on."""
    return f"{gpu_label(data.environments[cohort.environment])} · {_region(data, cohort)}"


def _region(data: OperationData, cohort: Cohort) -> str:
    return data.protocols[cohort.protocol].spec.timed_region


def _slot(kind: str, title: str, row: RankedRow, vs_fastest: float | None, cohort: Cohort, label: str) -> HeadlineSlot:
    return HeadlineSlot(
        kind=kind,
        title=title,
        row=row,
        vs_fastest=vs_fastest,
        faster_than_baseline=row.faster_than_baseline,
        evidence_sentence=EVIDENCE_SENTENCES[row.evidence],
        cohort=cohort_key_short(cohort.key),
        cohort_label=label,
    )


def _gpu(data: OperationData, cohort: Cohort) -> str:
    gpu = data.gpu_of(cohort.environment)
    return gpu.slug if gpu else data.environments[cohort.environment].spec.hardware.product


def comparable(data: OperationData, a: Cohort, b: Cohort) -> bool:
    """Cohorts a "Fastest" card compares across: the same workload, timed region, ranked statistic and GPU
    (a product a source named without its variant counts as each variant it may be)."""
    ga, gb = _gpu(data, a), _gpu(data, b)
    return (a.workload == b.workload and _region(data, a) == _region(data, b)
            and (ga == gb or registry.gpu_may_be(ga, gb))
            and ranked_statistic_short(data, a) == ranked_statistic_short(data, b))


def _is_fastest(data: OperationData, cohort: Cohort, leader: RankedRow, all_cohorts: Mapping[str, Cohort]) -> bool:
    """No comparable cohort ranks a faster row of the leader's evidence or stronger."""
    level = LEVEL_ORDER[leader.evidence]
    return not any(e.item.median_ns < leader.median_ns and LEVEL_ORDER[e.item.evidence] <= level
                   for c in all_cohorts.values() if c.key != cohort.key and comparable(data, cohort, c)
                   for e in c.ranked)


def _fastest_verified_row(cohort: Cohort) -> int | None:
    return min((e.item.median_ns for e in cohort.ranked if e.item.evidence in VERIFIED_LEVELS), default=None)


def _fastest_verified(
    data: OperationData, selected: Cohort, all_cohorts: Mapping[str, Cohort], rows_of: RowsOf
) -> tuple[HeadlineSlot, Cohort] | None:
    """The fastest verified row of the workload and region: on the selected cohort's GPU when a comparable
    cohort has one, else on the GPU the default rule leads with among the verified cohorts."""
    region = _region(data, selected)
    verified = [c for c in all_cohorts.values() if c.workload == selected.workload and _region(data, c) == region
                and _fastest_verified_row(c) is not None]
    group = [c for c in verified if comparable(data, selected, c)]
    if not group:
        lead = pick_default(data, [c for c in verified if not comparable(data, selected, c)])
        group = [c for c in verified if lead is not None and comparable(data, lead, c)]
    if not group:
        return None
    best = min(group, key=lambda c: (_fastest_verified_row(c) or 0, c.key))
    rows = ranked_only(rows_of(best))
    row = min((r for r in rows if r.evidence in VERIFIED_LEVELS), key=lambda r: r.median_ns)
    label = cohort_label(data.environments[best.environment], data.protocols[best.protocol])
    slot = _slot("fastest_verified", f"Fastest verified · {_where(data, best)}", row, None, best, label)
    floors = run_floors(data, best.run(row.digest))
    if floors and not skips_floor_traffic(row.region_note):
        slot.floor_ratio = floors[0].ratio(row.median_ns)
    return slot, best


def fastest_by_language(rows: list[RankedRow]) -> list[LanguageLeader]:
    seen: dict[str, LanguageLeader] = {}
    for row in rows:
        lang = row.implementation.language
        if lang not in seen:
            seen[lang] = LanguageLeader(
                lang, row.implementation.title, row.median_ns, row.rank_label, row.vs_first, row.run_id
            )
    return list(seen.values()) if len(seen) >= 2 else []


def _compute_bound_words(data: OperationData, cohort: Cohort) -> str:
    rule = registry.floor_flops(data.operation)
    if rule is None:
        return "no arithmetic formula for this family: bandwidth floor only"
    counted = ("the operation's declared formula" if rule.why == registry.DECLARED_FLOPS
               else f"the family's standard count (KernelIndex registry: {rule.why})")
    rate = ("" if data.workloads[cohort.workload].spec.dtypes else
            ", over the GPU's fastest dense rate since the operation does not say which precision its math runs in")
    return f"flops from {counted}{rate}"


def floor_view(data: OperationData, cohort: Cohort, rows: list[RankedRow]) -> FloorView | None:
    floors = cohort_floors(data, cohort)
    if floors is None or not rows:
        return None
    physical, attainable = floors
    # The record is the fastest row the floor bounds: a backward that only scales is not held to it.
    record = min((r.median_ns for r in rows if not skips_floor_traffic(r.region_note)), default=None)
    bound = _compute_bound_words(data, cohort)
    return FloorView(
        physical=physical.to_json(),
        attainable=attainable.to_json() if attainable else None,
        record_ratio=physical.ratio(record),
        attainable_record_ratio=attainable.ratio(record) if attainable else None,
        explanation=(
            f"floor-v1 ({physical.region}): {REGION_FLOOR_WORDS[physical.region]}; {bound}. "
            f"Lower bounds, not evidence: the physical floor {format_duration(physical.floor_ns)} "
            "(datasheet peaks: no correct run beats it)"
            + (f", the attainable floor {format_duration(attainable.floor_ns)} ({attainable.bandwidth_source})."
               if attainable else
               "; no attainable floor: no runner measured this GPU and no verified run ran on it.")
            + f" Latency term: {physical.latency_words}"
        ),
    )
