"""Issue 20 items 3–5 over the shipped catalog: headline cards compare like with like and name their
GPU and timed region; no cohort ranks one implementation twice; no margin is below 1; the fastest
median heads every tie."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

from kernelindex.catalog.db import Catalog
from kernelindex.readmodel.cohorts import cohorts_of
from kernelindex.readmodel.labels import cohort_key_short, cohort_label, gpu_label
from kernelindex.readmodel.operation_data import OperationData
from kernelindex.readmodel.operation_model import operation_model
from kernelindex.readmodel.pages_common import cohort_summaries

NOW = datetime(2026, 11, 29, tzinfo=UTC)


def test_fastest_verified_cards_share_the_timed_region_and_every_card_names_gpu_and_region(
        catalog_operations: dict[str, OperationData]) -> None:
    checked = 0
    for data in catalog_operations.values():
        model = operation_model(data, NOW)
        cohorts = model.cohorts
        verified_workloads = {c.workload for c in cohorts.values()
                              if c.leader is not None and c.leader.evidence in ("verified", "replicated")}
        for cohort in cohorts.values():
            if cohort.workload not in verified_workloads or not cohort.ranked:
                continue
            region = data.protocols[cohort.protocol].spec.timed_region
            for slot in model.headline(cohort):
                shown = next(c for c in cohorts.values() if cohort_key_short(c.key) == slot.cohort)
                assert data.protocols[shown.protocol].spec.timed_region == region, (data.slug, slot.title)
                assert gpu_label(data.environments[shown.environment]) in slot.title and region in slot.title
                checked += slot.kind == "fastest_verified"
    assert checked > 50


def test_no_cohort_ranks_one_implementation_twice_and_no_margin_is_below_one(
        catalog_operations: dict[str, OperationData]) -> None:
    twice, margins, ties = [], [], []
    for data in catalog_operations.values():
        for cohort in cohorts_of(data).values():
            counts = Counter(cohort.run(e.item.id).implementation for e in cohort.ranked)
            if any(n > 1 for n in counts.values()):
                twice.append((data.slug, cohort.key[:12]))
            medians = [e.item.median_ns for e in cohort.ranked]
            if medians != sorted(medians):
                ties.append((data.slug, cohort.key[:12]))
        margins += [(s.operation, s.key) for s in cohort_summaries(data, NOW)
                    if s.margin_vs_second is not None and s.margin_vs_second < 1]
    assert twice == [] and margins == [] and ties == []


def test_geglu_mlp_h200_backward_names_the_fastest_of_its_tie(catalog: Catalog,
                                                             catalog_operations: dict[str, OperationData]) -> None:
    """The audit: Transformers at 28.19 ms headed the cohort while torch.compile at 26.82 ms shared "1=".
    Both runs stopped at 20 of 100 samples, so since issue 19 neither is ranked; where such a tie is
    ranked, the fastest median heads it (every tie in the catalog: the test above)."""
    data = catalog_operations["geglu-mlp"]
    audit = {r.median_ns: r for r in data.runs if r.median_ns in (26_818_896, 28_186_048)}
    assert len(audit) == 2
    cohort = cohorts_of(data)[audit[26_818_896].cohort_key]
    ranked = [cohort.run(e.item.id).median_ns for e in cohort.ranked]
    if all(r.eligible for r in audit.values()):
        assert ranked[0] == 26_818_896
    else:
        assert 28_186_048 not in ranked[:1] and ranked == sorted(ranked)


def test_megatron_full_rows_are_a_labelled_variant_of_forward_backward(
        catalog_operations: dict[str, OperationData]) -> None:
    """Megatron's "backward" rows time a fresh forward + backward; its "full" rows also accumulate the
    gradients: a labelled variant, its own cohort, so one implementation never ranks twice."""
    for slug in ("megatron-cross-entropy", "megatron-swiglu", "megatron-rms-norm"):
        data = catalog_operations[slug]
        labels = {cohort_label(data.environments[c.environment], data.protocols[c.protocol])
                  for c in cohorts_of(data).values()}
        assert any("forward+backward (gradients accumulated across calls)" in label for label in labels), slug
        assert any(label.endswith("forward+backward · liger-kernel benchmark scripts") or
                   "forward+backward ·" in label for label in labels), slug
