"""The operation page's "Same shape, other dtype" section: another operation's evidence on the same sizes,
beside this page's ranking and never in it (``policy.other_dtype`` decides which pairs qualify).

For the selected workload, the counterpart's workload with the same axis values, and each of its cohorts
(GPU, region, the statistic it ranks): the fastest eligible run, its evidence and that cohort's own floor.
The answer depends on the counterpart too, so the answer cache keys the page by both operations' versions
(``answer_operations``)."""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache

from kernelindex import registry, urls
from kernelindex.catalog.db import Catalog
from kernelindex.policy.other_dtype import RelationRule, counterparts, dtype_words, same_shape_other_dtype
from kernelindex.readmodel.errors import NotFound
from kernelindex.readmodel.labels import (
    cohort_key_short,
    gpu_label,
    implementation_title,
    protocol_label,
    workload_key,
    workload_label,
)
from kernelindex.readmodel.loading import OperationData, load_operation
from kernelindex.readmodel.operation_model import operation_model
from kernelindex.readmodel.operation_views import OtherDtypeCohort, OtherDtypeSection
from kernelindex.readmodel.ranking_notes import ranked_statistic


def rules() -> list[RelationRule]:
    return [RelationRule(r["here"], r["there"], r["why"]) for r in registry.relation_rules()]


@lru_cache(maxsize=4096)  # read on every request of an operation's answers; the reviewed rules are shipped
def answer_operations(slug: str) -> tuple[str, ...]:
    """The operations an answer about ``slug`` reads: itself and its reviewed counterparts (the cache's scope)."""
    return (slug, *sorted({other for other, _ in counterparts(slug, rules())}))


def other_dtype_sections(catalog: Catalog, data: OperationData, workload: str | None,
                         now: datetime) -> list[OtherDtypeSection]:
    """One section per reviewed counterpart in the catalog whose spec is this one's in other dtypes."""
    sections = []
    for slug, rule in counterparts(data.slug, rules()):
        try:
            other = load_operation(catalog, slug)
        except NotFound:
            continue
        relation = same_shape_other_dtype(data.operation, other.operation, rule)
        if relation is None:
            continue
        section = OtherDtypeSection(slug, other.title, urls.operation(slug), dtype_words(relation),
                                    relation.dtypes_here, relation.dtypes_there, relation.why)
        if workload is not None:
            _fill(section, other, data.workloads[workload].spec.axes, now)
        sections.append(section)
    return sections


def _fill(section: OtherDtypeSection, other: OperationData, axes: dict[str, int], now: datetime) -> None:
    match = next((d for d, w in other.workloads.items() if w.spec.axes == axes), None)
    if match is None:
        return
    section.workload, section.workload_label = workload_key(match), workload_label(other.operation,
                                                                                    other.workloads[match])
    section.workload_url = urls.operation(other.slug, ("workload", section.workload))
    model = operation_model(other, now)
    for cohort in (c for c in model.cohorts.values() if c.workload == match and c.eligible):
        leader = cohort.leader
        floor = model.floor_view(cohort)
        section.cohorts.append(OtherDtypeCohort(
            gpu=gpu_label(other.environments[cohort.environment]),
            mode=other.protocols[cohort.protocol].spec.timed_region,
            statistic=ranked_statistic(other, cohort),
            protocol=protocol_label(other.protocols[cohort.protocol]),
            best_ns=cohort.leader_ns,
            best_implementation=implementation_title(other.implementations[leader.implementation]) if leader else None,
            best_run_id=leader.run_id if leader else None,
            evidence=leader.evidence if leader else None,
            eligible_runs=len(cohort.eligible),
            floor=floor.physical if floor else None,
            url=urls.cohort(other.slug, section.workload, cohort_key_short(cohort.key)),
        ))
    section.cohorts.sort(key=lambda c: (c.gpu, c.mode))
