"""Operation answers: the index of operations and the operation page (also its JSON twin and the
CLI's view). Everything is computed from loaded catalog data with the policy functions."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime

from kernelindex import registry, urls
from kernelindex.catalog.db import Catalog
from kernelindex.domain.canonical import short_digest
from kernelindex.domain.manifests import stored_json
from kernelindex.policy.ratios import ratio
from kernelindex.readmodel.cohorts import Cohort, cohorts_of
from kernelindex.readmodel.folding import fold_long_lists
from kernelindex.readmodel.gaps import asked_gpu, not_measured, on_gpu
from kernelindex.readmodel.headline import fastest_by_language, floor_view, headline_slots
from kernelindex.readmodel.labels import (
    Shown,
    axis_order,
    cohort_key_short,
    cohort_label,
    gpu_label,
    implementation_slug,
    implementation_title,
    protocol_label,
    tell_apart,
    workload_key,
    workload_label,
)
from kernelindex.readmodel.leaderboard import leaderboards
from kernelindex.readmodel.loading import OperationData, Run, load_operation
from kernelindex.readmodel.memory import memory_panel
from kernelindex.readmodel.operation_select import other_gpus, select
from kernelindex.readmodel.operation_views import (
    CohortOption,
    ImplementationSummary,
    OperationPage,
    OperationSummary,
    RankedRow,
    SourceSummary,
    WorkloadSummary,
)
from kernelindex.readmodel.other_dtype import other_dtype_sections
from kernelindex.readmodel.ranking_notes import ranked_statistic, ranking_notes
from kernelindex.readmodel.requests import ask_url
from kernelindex.readmodel.rows import implementation_ref, ranked_only, ranked_rows
from kernelindex.readmodel.scaling import scaling_chart
from kernelindex.readmodel.shapes import shape_table
from kernelindex.readmodel.source_notices import source_notice
from kernelindex.readmodel.summaries import operation_summaries


def operations_index(catalog: Catalog, *, now: datetime | None = None) -> list[OperationSummary]:
    """Every operation with its counts (``now``: the summaries' clock, today when not given; nothing
    here depends on the day)."""
    return [OperationSummary(slug=s.slug, title=s.title, family=s.family, description=s.description,
                             aliases=s.aliases, eligible_runs=s.eligible_runs, workloads=s.eligible_workloads,
                             implementations=s.eligible_implementations, digest=s.digest)
            for s in operation_summaries(catalog, now=now or datetime.now(UTC))]


def operation_page(
    catalog: Catalog, slug: str, *, workload: str | None = None, cohort: str | None = None, gpu: str | None = None,
    page: str | None = None, now: datetime,
) -> OperationPage:
    """The operation page; ``gpu`` (any alias: ``h100``) selects that GPU's cohort of the workload, or
    says near the top that it is not measured there, with its floor estimate and the nearest measured GPU.
    ``page``: which page of a long workload list it carries (readmodel.folding)."""
    data = load_operation(catalog, slug)
    built = build_operation_page(data, workload=workload, cohort=cohort, gpu=gpu, now=now)
    selected = next((w.digest for w in built.workloads if w.selected), None)
    built.other_dtype = other_dtype_sections(catalog, data, selected, now)
    return fold_long_lists(built, page)


def build_operation_page(
    data: OperationData, *, workload: str | None, cohort: str | None, now: datetime, gpu: str | None = None,
) -> OperationPage:
    all_cohorts = cohorts_of(data)
    eligible = [r for r in data.runs if r.eligible]
    eligible_by_workload: dict[str, int] = defaultdict(int)
    for r in eligible:
        eligible_by_workload[r.workload] += 1
    asked = asked_gpu(gpu)
    selected_workload, workload_cohorts, selected = select(
        data, all_cohorts, eligible_by_workload, workload, cohort, asked)
    asked_gap = not_measured(data, selected, all_cohorts, [asked.slug])[0] \
        if asked and selected and not on_gpu(data, workload_cohorts, asked.slug) else None
    if asked_gap and asked_gap.nearest and not cohort:  # show the nearest measured GPU's cohort below
        selected = next((c for c in workload_cohorts if cohort_key_short(c.key) == asked_gap.nearest.cohort), selected)
    rows = ranked_rows(data, selected, now) if selected else []
    page = OperationPage(
        slug=data.slug,
        title=data.title,
        description=data.operation.metadata.description or "",
        digest=data.digest,
        digest_short=short_digest(data.digest),
        family=data.operation.spec.family,
        eligible_runs=len(eligible),
        semantics=_semantics(data),
        workloads=_workload_summaries(data, eligible_by_workload, selected_workload, selected, all_cohorts),
        selected_workload=workload_key(selected_workload) if selected_workload else None,
        cohorts=_distinguished([(c, _cohort_summary(data, c, selected)) for c in _ordered(data, workload_cohorts)]),
        selected_cohort=cohort_key_short(selected.key) if selected else None,
        cohort_line=_cohort_line(data, selected) if selected else None,
        headline=headline_slots(data, selected, rows, all_cohorts, now) if selected else [],
        fastest_by_language=fastest_by_language(ranked_only(rows)),
        coverage_gaps=_coverage_gaps(data, workload_cohorts),
        coverage_asks=_coverage_asks(data, workload_cohorts, selected_workload),
        floor=floor_view(data, selected, rows) if selected else None,
        ranked=rows,
        not_ranked=_not_ranked(data, selected) if selected else [],
        scaling=scaling_chart(data, selected, all_cohorts) if selected else None,
        implementations=_implementation_summaries(data, selected, rows),
        sources=_sources(data),
        shapes=shape_table(data, selected, all_cohorts) if selected else None,
        not_measured=[g for g in not_measured(data, selected, all_cohorts) if not asked_gap or g.gpu != asked_gap.gpu]
        if selected else [],
        asked_gpu=asked_gap,
        json_url=_json_url(data.slug, selected_workload, selected, asked_gap.gpu if asked_gap else None),
        memory=memory_panel(data, selected_workload, selected.environment if selected else None,
                            [r.implementation.slug for r in rows]),
        leaderboards=leaderboards(data),
        ranking_notes=ranking_notes(data, selected, rows, workload_cohorts),
        other_gpus=other_gpus(data, workload_cohorts, selected, workload),
        generated_for=now,
    )
    return page


def _json_url(slug: str, workload: str | None, cohort: Cohort | None, gpu: str | None = None) -> str:
    return urls.api(urls.operation(slug, ("gpu", gpu), ("workload", workload_key(workload) if workload else None),
                                   ("cohort", cohort_key_short(cohort.key) if cohort else None)))


def _semantics(data: OperationData) -> dict:
    spec = stored_json(data.operation)["spec"]  # inputs, outputs, axes exactly as stored
    counted = registry.floor_flops(data.operation)  # the floor's FLOPs: a registry rule for an imported operation
    return {**_provenance(data), 
        "semantics": spec["semantics"],
        "inputs": spec["inputs"],
        "outputs": spec["outputs"],
        "axes": spec["axes"],
        "dtype_variables": spec.get("dtype_variables", {}),
        "may_alias": spec.get("may_alias", []),
        "determinism": spec.get("determinism", "unspecified"),
        "constraints": spec.get("constraints", []),
        "reference": spec.get("reference"),
        "tolerance": spec.get("tolerance", {}),
        "flops": counted.flops if counted else None,
        "flops_why": counted.why if counted and counted.why != registry.DECLARED_FLOPS else None,
    }


def _provenance(data: OperationData) -> dict:
    """Where the semantics text comes from, when a source wrote it (its attribution and license), and
    the operation's reviewed links; absent for the registry's own operations."""
    metadata = data.operation.metadata
    policy = registry.source_policy(metadata.labels.get("imported_from", ""))
    out: dict = {}
    if policy is not None:
        out["notice"] = {"attribution": policy.attribution, "license": policy.license_name,
                         "license_url": policy.license_url}
    related = {label: url for label, url in metadata.links.items() if url.startswith(urls.operation(""))}
    if related:
        out["related"] = related
    return out


def _workload_summaries(
    data: OperationData, eligible_by_workload: dict[str, int], selected: str | None,
    selected_cohort: Cohort | None = None, all_cohorts: dict[str, Cohort] | None = None,
) -> list[WorkloadSummary]:
    """Workloads in numeric axis order; each links to the selected cohort's GPU and protocol when measured there."""
    same_setup = {
        c.workload: cohort_key_short(c.key) for c in (all_cohorts or {}).values()
        if selected_cohort and c.eligible and c.environment == selected_cohort.environment
        and c.protocol == selected_cohort.protocol
    }
    order = axis_order(data.operation)
    ordered = sorted(
        eligible_by_workload, key=lambda d: tuple(data.workloads[d].spec.axes.get(a, 0) for a in order)
    )
    return [
        WorkloadSummary(
            key=workload_key(d),
            digest=d,
            label=workload_label(data.operation, data.workloads[d]),
            axes=data.workloads[d].spec.axes,
            dtypes=data.workloads[d].spec.dtypes,
            params=data.workloads[d].spec.params,
            eligible_runs=eligible_by_workload[d],
            selected=d == selected,
            cohort=same_setup.get(d),
        )
        for d in ordered
    ]


def _ordered(data: OperationData, cohorts: list[Cohort]) -> list[Cohort]:
    from kernelindex.policy.selection import MODE_ORDER

    def key(c: Cohort) -> tuple:
        return (
            MODE_ORDER.get(data.protocols[c.protocol].spec.timed_region, 9),
            gpu_label(data.environments[c.environment]),
            c.key,
        )

    return sorted(cohorts, key=key)


def _cohort_summary(data: OperationData, cohort: Cohort, selected: Cohort | None) -> CohortOption:
    leader = cohort.leader
    return CohortOption(
        key=cohort_key_short(cohort.key),
        label=cohort_label(data.environments[cohort.environment], data.protocols[cohort.protocol]),
        gpu=gpu_label(data.environments[cohort.environment]),
        mode=data.protocols[cohort.protocol].spec.timed_region,
        native=cohort.native,
        best_ns=cohort.leader_ns,
        best_implementation=implementation_title(data.implementations[leader.implementation]) if leader else None,
        best_run_id=leader.run_id if leader else None,
        eligible_runs=len(cohort.eligible),
        evidence=leader.evidence if leader else None,
        selected=selected is not None and cohort.key == selected.key,
    )


def _distinguished(options: list[tuple[Cohort, CohortOption]]) -> list[CohortOption]:
    """Cohorts that would read alike (same GPU, region, profile) say what tells them apart (labels.tell_apart)."""
    shown = [Shown(f"{o.label}", c.runner, c.protocol) for c, o in options]
    for (_, option), distinction in zip(options, tell_apart(shown), strict=True):
        option.distinct = distinction
    return [option for _, option in options]


def _cohort_line(data: OperationData, cohort: Cohort) -> dict:
    protocol = data.protocols[cohort.protocol]
    last = max(r.observed_at for r in cohort.eligible)
    return {
        "profile": "Source-native comparison" if cohort.native else "KernelIndex runner comparison",
        "gpu": gpu_label(data.environments[cohort.environment]),
        "workload": workload_label(data.operation, data.workloads[cohort.workload]),
        "protocol": protocol_label(protocol),
        "runner": cohort.runner,  # the KernelIndex runner that measured the cohort (None: its source reported it)
        "protocol_digest": cohort.protocol,
        "environment_digest": cohort.environment,
        "statistic": protocol.spec.statistic,
        "ranked_statistic": ranked_statistic(data, cohort),
        "results": len(cohort.eligible),
        "last_observed": last,
        "record_history": urls.records(("cohort", cohort_key_short(cohort.key))),
        "cohort_key": cohort.key,
    }


def _missing_gpus(data: OperationData, cohorts: list[Cohort]) -> list[str]:
    covered = {gpu.slug for c in cohorts if (gpu := data.gpu_of(c.environment)) is not None}
    return [g for g in registry.priority_gpus() if g not in covered]


def _coverage_gaps(data: OperationData, cohorts: list[Cohort]) -> list[str]:
    return [registry.gpus()[g].short for g in _missing_gpus(data, cohorts)]


def _coverage_asks(data: OperationData, cohorts: list[Cohort], workload: str | None) -> list[dict[str, str]]:
    """"Ask for this measurement" on each priority GPU the selected workload lacks."""
    if workload is None:
        return []
    return [{"gpu": g, "label": registry.gpus()[g].short, "url": ask_url(data.slug, workload_key(workload), g)}
            for g in _missing_gpus(data, cohorts)]




def _not_ranked(data: OperationData, cohort: Cohort) -> list[dict]:
    return [
        {
            "run_id": r.run_id,
            "implementation": implementation_title(data.implementations[r.implementation]),
            "median_ns": r.median_ns,
            "status": r.status,
            "reasons": [x.to_json() for x in r.eligibility.reasons] if r.eligibility else [],
        }
        for r in cohort.runs
        if not r.eligible
    ]


def _implementation_summaries(
    data: OperationData, cohort: Cohort | None, rows: list[RankedRow]
) -> list[ImplementationSummary]:
    lines: dict[str, list[Run]] = defaultdict(list)
    for run in data.runs:
        if run.eligible:
            lines[implementation_slug(data.implementations[run.implementation])].append(run)
    leader = next((r.median_ns for r in rows if r.rank), None)
    summaries = []
    for slug, runs in sorted(lines.items()):
        in_cohort = [r for r in rows if r.implementation.slug == slug]
        best = in_cohort[0] if in_cohort else None
        newest = max(runs, key=lambda r: r.observed_at)
        # Availability follows the revision measured in the selected cohort, else the newest one.
        summaries.append(
            ImplementationSummary(
                implementation=best.implementation if best else implementation_ref(data, newest.implementation),
                workloads_measured=len({r.workload for r in runs}),
                best_ns_in_cohort=best.median_ns if best else None,
                vs_leader=ratio(best.median_ns, leader) if best else None,
                best_run_id=best.run_id if best else None,
                evidence=best.evidence if best else None,
            )
        )
    return sorted(
        summaries, key=lambda s: (s.best_ns_in_cohort is None, s.best_ns_in_cohort or 0, s.implementation.slug)
    )


def _sources(data: OperationData) -> list[SourceSummary]:
    by_source: dict[str, list[Run]] = defaultdict(list)
    for run in [*data.runs, *data.memory_runs, *data.score_runs]:
        by_source[run.source].append(run)
    summaries = []
    for name, runs in sorted(by_source.items()):
        notice = source_notice(name, data.sources.get(name))
        summaries.append(SourceSummary(name, len(runs), max(r.observed_at for r in runs), **notice.described()))
    return summaries


def load_operation_runs(catalog: Catalog, slug: str) -> OperationData:
    """Lower-level access for the resolver: the loaded runs with policy facts already derived."""
    return load_operation(catalog, slug)


__all__ = ["OperationPage", "operation_page", "operations_index", "load_operation_runs"]
