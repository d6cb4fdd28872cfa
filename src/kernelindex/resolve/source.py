"""The resolver's view of the catalog, built from the read model so that cohorts, eligibility,
evidence, usability and ranks are exactly the ones the operation pages show.

Every table it derives is kept under the table's name and its arguments: the operations' manifests and
the vocabulary per catalog version (``readmodel.cache.kept``), an operation's ranked cohorts per version
of that operation (``readmodel/versions.py``), so a publication makes a query rank again only the
operations it changed; later queries only filter in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TypeVar

import orjson

from kernelindex import registry
from kernelindex.catalog.db import Catalog
from kernelindex.policy.reasons import Reason
from kernelindex.readmodel.cache import READ_CACHE, kept
from kernelindex.readmodel.cohorts import cohorts_of
from kernelindex.readmodel.labels import axis_order, cohort_key_short, workload_key
from kernelindex.readmodel.leaderboard import ScoreShare, score_shares
from kernelindex.readmodel.listing_facts import gpu_short
from kernelindex.readmodel.loading import OperationData, Run
from kernelindex.readmodel.objects import operation_bodies
from kernelindex.readmodel.operation_views import ImplementationRef
from kernelindex.readmodel.operations import load_operation_runs
from kernelindex.readmodel.ranking_notes import host_bound_label, ranked_statistic_short
from kernelindex.readmodel.region_work import forward_work_note
from kernelindex.readmodel.rows import flagged_ref, implementation_ref
from kernelindex.readmodel.summaries import OperationCounts, counts_of
from kernelindex.readmodel.versions import VERSIONS
from kernelindex.resolve.cohorts import LeaderboardScores, OperationEvidence, RankedCohort, order_key, ranks_verified
from kernelindex.resolve.run_facts import ImplementationFacts, RunFacts
from kernelindex.resolve.vocabulary import Vocabulary, build_vocabulary, operation_entry_json, registry_vocabulary

T = TypeVar("T")


def _facts(ref: ImplementationRef) -> ImplementationFacts:
    return ImplementationFacts(
        slug=ref.slug, title=ref.title, language=ref.language, license=ref.license, usable=ref.usable,
        baseline=ref.role == "baseline", project=ref.project, install_command=ref.install_command,
        unusable_reasons=tuple(Reason(r["code"], r["sentence"]) for r in ref.not_usable_reasons),
        availability=ref.availability,
    )


def _implementation(data: OperationData, run: Run,
                    shared: dict[str, tuple[ImplementationRef, ImplementationFacts]]) -> ImplementationFacts:
    """The implementation beside this run, as the operation page's row shows it (``flagged_ref``: a row its own
    source flags is not usable); unflagged runs share one object per implementation."""
    if run.implementation not in shared:
        ref = implementation_ref(data, run.implementation)
        shared[run.implementation] = ref, _facts(ref)
    ref, facts = shared[run.implementation]
    flagged = flagged_ref(ref, run)
    return facts if flagged is ref else _facts(flagged)


def _run_facts(data: OperationData) -> dict[str, RunFacts]:
    impls: dict[str, tuple[ImplementationRef, ImplementationFacts]] = {}
    order = axis_order(data.operation)
    views = {}
    for run in data.runs:
        workload = data.workloads[run.workload].spec
        hardware = data.environments[run.environment].spec.hardware
        protocol = data.protocols[run.protocol].spec
        gpu = data.gpu_of(run.environment)
        views[run.digest] = RunFacts(
            run_id=run.run_id, operation=data.slug, cohort_key=run.cohort_key, workload_key=run.workload,
            axes=_ordered_axes(workload.axes, order), dtypes=dict(workload.dtypes),
            gpu=gpu.slug if gpu else None, gpu_label=gpu_short(data, run.environment),
            arch=gpu.architecture if gpu else hardware.architecture,
            mode=protocol.timed_region, protocol_key=run.protocol, native=protocol.native,
            implementation=_implementation(data, run, impls), evidence=run.evidence, eligible=run.eligible,
            median_ns=run.median_ns, p20_ns=run.p20_ns, p80_ns=run.p80_ns, observed_at=run.observed_at,
            source=run.source, runner=run.runner,
            ineligible_reasons=tuple(run.eligibility.reasons) if run.eligibility else (),
            workload_ref=workload_key(run.workload), cohort_ref=cohort_key_short(run.cohort_key),
            region_note=forward_work_note(data, run), host_bound=host_bound_label(run),
        )
    return views


def _ordered_axes(axes: dict[str, int], order: list[str]) -> dict[str, int]:
    """Axes in the operation's declared order (seq, hidden, … for rope), the rest after."""
    return {**{a: axes[a] for a in order if a in axes}, **{a: v for a, v in sorted(axes.items()) if a not in order}}


def _unranked(view: RunFacts, replicate: Reason | None) -> RunFacts:
    """An unranked run's view, saying why: ineligible, or a replicate of its implementation's row."""
    return view if replicate is None else replace(view, ineligible_reasons=(replicate,))


def cohorts_from(data: OperationData) -> list[RankedCohort]:
    """The read model's cohorts (ranked by its code) in the resolver's shape."""
    views = _run_facts(data)
    out = []
    for key, cohort in cohorts_of(data).items():
        # A row's figure is its implementation's replicates summarised (``Cohort.figure``), as its vs-#1 ratio is.
        ranked = tuple((replace(views[e.item.id], median_ns=e.item.median_ns), e.rank, e.label, e.within_noise,
                        e.vs_first) for e in cohort.ranked)
        ranked_ids = {e.item.id for e in cohort.ranked}
        excluded = tuple(sorted((_unranked(views[r.digest], cohort.replicate_reason(r.digest))
                                 for r in cohort.runs if r.digest not in ranked_ids), key=lambda v: v.run_id))
        sample = views[cohort.runs[0].digest]
        order = order_key(sample, key, registry.priority_gpus(), ranks_a_run=bool(ranked),
                          verified=ranks_verified(ranked))
        out.append(RankedCohort(key, sample, ranked, excluded, order, ranked_statistic_short(data, cohort)))
    return out


def scores_from(data: OperationData) -> tuple[LeaderboardScores, ...]:
    """Suite-scoped leaderboard score runs per GPU (they are not in any workload's cohort)."""
    return tuple(_scores(s) for s in score_shares(data))


def _scores(share: ScoreShare) -> LeaderboardScores:
    return LeaderboardScores(share.gpu, share.gpu_label, share.runs)


def evidence_from(counts: OperationCounts) -> OperationEvidence:
    """The chooser's counts of an operation, from those stored beside its summary."""
    return OperationEvidence(counts.eligible_runs, tuple(sorted(counts.gpus.items())),
                             tuple(_scores(s) for s in counts.scores))


class CatalogCohortSource:
    """A :class:`~kernelindex.resolve.cohorts.CohortSource` over one version of a catalog: every read
    of one resolution sees the same version, and what it derives is kept in the read model's cache."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._version = catalog.version()
        self._evidence: dict[str, OperationEvidence | None] = {}  # read once per source (the chooser asks twice)

    def _cached(self, table: str, arguments: tuple[str, ...], compute: Callable[[], T], *,
                long_lived: bool = False) -> T:
        return kept(self.catalog, table, arguments, compute, version=self._version, long_lived=long_lived)

    def version(self) -> int:
        return self._version

    def _operation_manifests(self) -> dict[str, bytes]:
        return self._cached("operation-manifests", (), lambda: operation_bodies(self.catalog))

    def vocabulary(self) -> Vocabulary:
        def build() -> Vocabulary:
            base = registry_vocabulary()
            extra = [operation_entry_json(slug, orjson.loads(body))
                     for slug, body in self._operation_manifests().items() if slug not in base.operations]
            return build_vocabulary([*base.operations.values(), *extra], list(base.gpus.values())) if extra else base

        return self._cached("vocabulary", (), build)

    def priority_gpus(self) -> Sequence[str]:
        return registry.priority_gpus()

    def _loaded(self, operation: str) -> tuple[list[RankedCohort], tuple[LeaderboardScores, ...]]:
        def load() -> tuple[list[RankedCohort], tuple[LeaderboardScores, ...]]:
            data = load_operation_runs(self.catalog, operation)
            return cohorts_from(data), scores_from(data)

        # Kept by the operation's own version: a publication of another operation leaves it as it is
        return READ_CACHE.get(self.catalog, ("service", "ranked-cohorts", operation), load, long_lived=True,
                              version=VERSIONS.current(self.catalog).of(operation), scope=operation)

    def cohorts(self, operation: str) -> Sequence[RankedCohort]:
        if operation not in self._operation_manifests():
            return []
        return self._loaded(operation)[0]

    def leaderboard_scores(self, operation: str) -> Sequence[LeaderboardScores]:
        if operation not in self._operation_manifests():
            return ()
        return self._loaded(operation)[1]

    def operations(self) -> list[str]:
        """Slugs of the operations stored in the catalog (no runs loaded)."""
        return sorted(self._operation_manifests())

    def evidence(self, operations: Sequence[str]) -> dict[str, OperationEvidence]:
        """From the operations' stored summaries (``readmodel/summaries.py``): the chooser weighs hundreds
        of candidates ("gemm" names ~700 operations) without loading one of them."""
        wanted = set(operations) & set(self._operation_manifests())
        if unread := wanted - set(self._evidence):
            counts = counts_of(self.catalog, unread, now=datetime.now(UTC))
            self._evidence.update((slug, evidence_from(counts[slug]) if slug in counts else None) for slug in unread)
        return {slug: e for slug in wanted if (e := self._evidence[slug]) is not None}
