"""Operation answers: the index of operations and the operation page (also its JSON twin and the
CLI's view). The page is a projection of the operation's model (``readmodel.operation_model``): it lays
out what the model derived and enters no policy rule itself (tests/test_architecture.py)."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime

from kernelindex import registry, urls
from kernelindex.catalog.db import Catalog
from kernelindex.domain.canonical import short_digest
from kernelindex.domain.manifests import stored_json
from kernelindex.readmodel.cohorts import Cohort
from kernelindex.readmodel.court import reproduction_json
from kernelindex.readmodel.folding import fold_long_lists
from kernelindex.readmodel.labels import (
    Shown,
    axis_order,
    cohort_key_short,
    cohort_label,
    gpu_label,
    implementation_title,
    protocol_label,
    tell_apart,
    workload_key,
    workload_label,
)
from kernelindex.readmodel.loading import OperationData, Run, load_operation
from kernelindex.readmodel.operation_model import OperationModel, operation_model
from kernelindex.readmodel.operation_views import (
    CohortOption,
    OperationPage,
    OperationSummary,
    SourceSummary,
    WorkloadSummary,
)
from kernelindex.readmodel.other_dtype import other_dtype_sections
from kernelindex.readmodel.ranking_notes import ranked_statistic
from kernelindex.readmodel.requests import ask_url
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
    """The page as a projection of the operation's model (``readmodel.operation_model``)."""
    model = operation_model(data, now)
    chosen = model.select(workload, cohort, gpu)
    selected, workload_cohorts, gap = chosen.cohort, chosen.cohorts, chosen.asked_gap
    rows = model.rows(selected) if selected else []
    return OperationPage(
        slug=data.slug,
        title=data.title,
        description=data.operation.metadata.description or "",
        digest=data.digest,
        digest_short=short_digest(data.digest),
        family=data.operation.spec.family,
        eligible_runs=model.eligible_runs,
        semantics=_semantics(data),
        workloads=_workload_summaries(model, chosen.workload, selected),
        selected_workload=workload_key(chosen.workload) if chosen.workload else None,
        cohorts=_distinguished([(c, _cohort_summary(data, c, selected)) for c in model.ordered(workload_cohorts)]),
        selected_cohort=cohort_key_short(selected.key) if selected else None,
        cohort_line=_cohort_line(data, selected) if selected else None,
        headline=model.headline(selected) if selected else [],
        fastest_by_language=model.language_leaders(selected) if selected else [],
        coverage_gaps=[registry.gpus()[g].short for g in model.missing_gpus(workload_cohorts)],
        coverage_asks=_coverage_asks(model, workload_cohorts, chosen.workload),
        floor=model.floor_view(selected) if selected else None,
        ranked=rows,
        not_ranked=_not_ranked(data, selected) if selected else [],
        scaling=model.scaling(selected) if selected else None,
        implementations=model.implementation_lines(selected),
        sources=_sources(data),
        shapes=model.shapes(selected) if selected else None,
        not_measured=[g for g in model.gaps(selected) if not gap or g.gpu != gap.gpu] if selected else [],
        asked_gpu=gap,
        json_url=_json_url(data.slug, chosen.workload, selected, gap.gpu if gap else None),
        memory=model.memory(chosen.workload, selected),
        leaderboards=model.leaderboards(),
        ranking_notes=model.ranking_notes(selected, workload_cohorts),
        other_gpus=model.other_gpus(chosen, workload),
        generated_for=now,
    )


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


def _workload_summaries(model: OperationModel, selected: str | None,
                        selected_cohort: Cohort | None) -> list[WorkloadSummary]:
    """Workloads in numeric axis order; each links to the selected cohort's GPU and protocol when measured there."""
    data, eligible_by_workload = model.data, model.eligible_by_workload
    same_setup = {
        c.workload: cohort_key_short(c.key) for c in model.cohorts.values()
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


def _coverage_asks(model: OperationModel, cohorts: list[Cohort], workload: str | None) -> list[dict[str, str]]:
    """"Ask for this measurement" on each priority GPU the selected workload lacks."""
    if workload is None:
        return []
    return [{"gpu": g, "label": registry.gpus()[g].short, "url": ask_url(model.data.slug, workload_key(workload), g)}
            for g in model.missing_gpus(cohorts)]


def _not_ranked(data: OperationData, cohort: Cohort) -> list[dict]:
    return [
        {
            "run_id": r.run_id,
            "implementation": implementation_title(data.implementations[r.implementation]),
            "median_ns": r.median_ns,
            "status": r.status,
            "reasons": [x.to_json() for x in r.eligibility.reasons] if r.eligibility else [],
            # A figure the court did not reproduce leaves the ranking, not its row's two figures (issue 44 item 2)
            "reproduction": reproduction_json(data, r),
        }
        for r in cohort.runs
        if not r.eligible
    ]


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
