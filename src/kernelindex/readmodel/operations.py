"""Operation answers: the index of operations and the operation page (also its JSON twin and the
CLI's view). Everything is computed from loaded catalog data with the policy functions."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kernelindex import registry
from kernelindex.catalog.db import Catalog
from kernelindex.domain.canonical import short_digest
from kernelindex.domain.units import format_duration
from kernelindex.policy.cohorts import environment_key
from kernelindex.policy.evidence import SENTENCES as EVIDENCE_SENTENCES
from kernelindex.policy.floor import Ceilings, FloorEstimate, compulsory_traffic, floor_estimate
from kernelindex.policy.ranking import Ranked
from kernelindex.policy.selection import (
    CohortChoice,
    WorkloadChoice,
    baseline_multiple,
    default_cohort,
    default_workload,
)
from kernelindex.policy.staleness import is_stale
from kernelindex.readmodel.cohorts import Cohort, cohorts_of
from kernelindex.readmodel.gaps import NotMeasured, not_measured
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.labels import (
    axis_order,
    cohort_key_short,
    cohort_label,
    gpu_label,
    implementation_slug,
    implementation_title,
    project_title,
    protocol_label,
    workload_key,
    workload_label,
)
from kernelindex.readmodel.loading import NotFound, OperationData, Run, load_operation, operation_slugs
from kernelindex.readmodel.scaling import ScalingChart, scaling_chart
from kernelindex.readmodel.shapes import ShapeTable, shape_table


class BadSelection(ValueError):
    """A ?workload= or ?cohort= value that names nothing on this page (a 400, not a 404)."""


@dataclass
class ImplementationRef(JsonModel):
    slug: str
    title: str
    project: str
    language: str
    role: str
    version: str | None
    license: str | None
    usable: bool
    install_command: str | None
    not_usable_reasons: list[dict]
    source_url: str | None
    in_place: bool


@dataclass
class RankedRow(JsonModel):
    rank: int
    rank_label: str
    tied: bool
    within_noise: bool
    run_id: str
    digest: str
    implementation: ImplementationRef
    median_ns: int
    p20_ns: int | None
    p80_ns: int | None
    vs_first: float
    evidence: str
    observed_at: datetime
    stale: bool
    time_zone_recorded: bool
    is_baseline: bool
    faster_than_baseline: float | None
    rationale: list[str]
    floor_ratio: float | None = None  # "N× above floor" (floor-v1, datasheet; an estimate)
    throughput: float | None = None  # achieved GB/s (bandwidth-bound) or TFLOP/s (compute-bound)
    throughput_unit: str | None = None
    method: str | None = None  # how the run was timed (runner runs: cuda_graph_replay / per_call_events)
    method_note: str | None = None  # said when it differs from the cohort's usual method


@dataclass
class HeadlineSlot(JsonModel):
    kind: str  # fastest_usable | best_usable | fastest_not_usable | fastest_verified
    title: str
    row: RankedRow
    vs_fastest: float | None
    faster_than_baseline: float | None
    evidence_sentence: str
    cohort: str
    cohort_label: str
    floor_ratio: float | None = None


@dataclass
class CohortSummary(JsonModel):
    key: str
    label: str
    gpu: str
    mode: str
    native: bool
    best_ns: int | None
    best_implementation: str | None
    best_run_id: str | None
    eligible_runs: int
    evidence: str | None
    selected: bool


@dataclass
class WorkloadSummary(JsonModel):
    key: str
    digest: str
    label: str
    axes: dict[str, int]
    dtypes: dict[str, str]
    params: dict[str, Any]
    eligible_runs: int
    selected: bool
    cohort: str | None = None  # the selected cohort's GPU and protocol on this workload, when measured there


@dataclass
class FloorView(JsonModel):
    datasheet: dict
    measured: dict | None
    record_ratio: float | None
    measured_record_ratio: float | None
    explanation: str


@dataclass
class LanguageLeader(JsonModel):
    language: str
    implementation: str
    median_ns: int
    rank_label: str
    vs_first: float
    run_id: str


@dataclass
class ImplementationSummary(JsonModel):
    implementation: ImplementationRef
    workloads_measured: int
    best_ns_in_cohort: int | None
    vs_leader: float | None
    best_run_id: str | None
    evidence: str | None


@dataclass
class SourceSummary(JsonModel):
    name: str
    runs: int
    last_observed: datetime
    title: str | None = None
    url: str | None = None
    license: str | None = None
    attribution: str | None = None


@dataclass
class OperationPage(JsonModel):
    slug: str
    title: str
    description: str
    digest: str
    digest_short: str
    family: str
    eligible_runs: int
    semantics: dict
    workloads: list[WorkloadSummary]
    selected_workload: str | None
    cohorts: list[CohortSummary]
    selected_cohort: str | None
    cohort_line: dict | None
    headline: list[HeadlineSlot]
    fastest_by_language: list[LanguageLeader]
    coverage_gaps: list[str]
    floor: FloorView | None
    ranked: list[RankedRow]
    not_ranked: list[dict]
    scaling: ScalingChart | None
    implementations: list[ImplementationSummary]
    sources: list[SourceSummary]
    shapes: ShapeTable | None = None
    not_measured: list[NotMeasured] = field(default_factory=list)
    json_url: str = ""
    generated_for: datetime = field(default_factory=lambda: datetime.now(UTC))


@dataclass
class OperationSummary(JsonModel):
    slug: str
    title: str
    family: str
    description: str
    aliases: list[str]
    eligible_runs: int
    workloads: int
    implementations: int
    digest: str


# --- index -------------------------------------------------------------------------------------


def operations_index(catalog: Catalog) -> list[OperationSummary]:
    summaries = []
    for slug in sorted(operation_slugs(catalog)):
        data = load_operation(catalog, slug)
        eligible = [r for r in data.runs if r.eligible]
        meta = data.operation["metadata"]
        summaries.append(
            OperationSummary(
                slug=slug,
                title=meta.get("title", slug),
                family=data.operation["spec"]["family"],
                description=meta.get("description", ""),
                aliases=meta.get("aliases", []),
                eligible_runs=len(eligible),
                workloads=len({r.workload for r in eligible}),
                implementations=len({implementation_slug(data.implementations[r.implementation]) for r in eligible}),
                digest=data.digest,
            )
        )
    return summaries


# --- helpers shared with other read models ----------------------------------------------------


def implementation_ref(data: OperationData, digest: str) -> ImplementationRef:
    impl = data.implementations[digest]
    spec = impl["spec"]
    project = data.projects.get(spec["project"], {})
    usable = data.usability[digest]
    return ImplementationRef(
        slug=implementation_slug(impl),
        title=implementation_title(impl),
        project=project_title(project) if project else "",
        language=spec["callable"]["language"],
        role=spec.get("role", "candidate"),
        version=spec.get("version"),
        license=usable.license,
        usable=usable.usable,
        install_command=usable.install_command,
        not_usable_reasons=[r.to_json() for r in usable.reasons],
        source_url=usable.source_url,
        in_place=spec.get("in_place", False),
    )


def floor_for(
    data: OperationData, workload: str, environment: str, protocol: str | None = None
) -> tuple[FloorEstimate, FloorEstimate | None] | None:
    """(datasheet floor, measured floor) of the protocol's timed region (forward without one)."""
    gpu = data.gpu_of(environment)
    if gpu is None:
        return None
    op_spec, wl_spec = data.operation["spec"], data.workloads[workload]["spec"]
    region = data.protocols[protocol]["spec"]["timed_region"] if protocol else "forward"
    datasheet = floor_estimate(op_spec, wl_spec, gpu, region=region, operation=data.slug)
    ceilings = measured_ceilings(data, environment)
    measured = floor_estimate(op_spec, wl_spec, gpu, region=region, operation=data.slug,
                              measured=ceilings) if ceilings else None
    return datasheet, measured


def measured_ceilings(data: OperationData, environment: str) -> Ceilings | None:
    """The highest bandwidths a runner measured in this environment (same hardware and software),
    per direction; the highest gives the lowest, still honest, measured floor."""
    key = environment_key(data.environments[environment]["spec"])
    same = [e["spec"] for e in data.environments.values() if environment_key(e["spec"]) == key]

    def best(field: str) -> float | None:
        return max((s[field] for s in same if s.get(field)), default=None)

    copy = best("copy_bandwidth_bytes_per_s")
    return Ceilings(copy, best("read_bandwidth_bytes_per_s"), best("write_bandwidth_bytes_per_s")) if copy else None


def floor_bytes(data: OperationData, workload: str) -> int:
    return sum(t.bytes for t in compulsory_traffic(data.operation["spec"], data.workloads[workload]["spec"]))


def ranked_rows(data: OperationData, cohort: Cohort, now: datetime) -> list[RankedRow]:
    baselines = [
        r.median_ns for r in cohort.eligible if data.implementations[r.implementation]["spec"].get("role") == "baseline"
    ]
    floors = floor_for(data, cohort.workload, cohort.environment, cohort.protocol)
    usual = usual_method(cohort)
    rows = [_row(data, cohort.run(entry.item.id), entry, baselines, now, usual) for entry in cohort.ranked]
    if floors:  # latency cohorts; a memory metric would have no floor ratio or throughput
        for row in rows:
            row.floor_ratio = floors[0].ratio(row.median_ns)
            rate = floors[0].throughput(row.median_ns)
            row.throughput, row.throughput_unit = rate if rate else (None, None)
    return rows


METHOD_WORDS = {
    "cuda_graph_replay": "CUDA graph replay (no launch cost between calls)",
    "per_call_events": "per-call CUDA events (the call could not be captured in a CUDA graph)",
}


def usual_method(cohort: Cohort) -> str | None:
    """The timing method most of the cohort's eligible runs used (None when no run says)."""
    methods = [r.spec["timing"].get("method") for r in cohort.eligible if r.spec["timing"].get("method")]
    return max(sorted(set(methods)), key=methods.count) if methods else None


def method_note(run: Run, usual: str | None) -> str | None:
    """A sentence for a row timed another way than the rest of its cohort: never a silent mix."""
    method = run.spec["timing"].get("method")
    if not method or not usual or method == usual:
        return None
    why = run.spec["timing"].get("raw", {}).get("capture_failure")
    said = METHOD_WORDS.get(method, method)
    return (f"Timed with {said}; most of this cohort used {METHOD_WORDS.get(usual, usual)}. "
            "Per-call events include each call's launch gaps, so this figure may sit above a graph-replay one"
            + (f" (capture failed: {why})." if why else "."))


def _row(data: OperationData, run: Run, entry: Ranked, baselines: list[int], now: datetime,
         usual: str | None = None) -> RankedRow:
    ref = implementation_ref(data, run.implementation)
    is_baseline = ref.role == "baseline"
    multiple = None if is_baseline else baseline_multiple(run.median_ns, baselines)  # type: ignore[arg-type]
    return RankedRow(
        rank=entry.rank,
        rank_label=entry.label,
        tied=entry.tied,
        within_noise=entry.within_noise,
        run_id=run.run_id,
        digest=run.digest,
        implementation=ref,
        median_ns=run.median_ns,  # type: ignore[arg-type]
        p20_ns=run.p20_ns,
        p80_ns=run.p80_ns,
        vs_first=entry.vs_first,
        evidence=run.evidence,
        observed_at=run.observed_at,
        stale=is_stale(run.observed_at, now),
        time_zone_recorded=run.spec["source"].get("time_zone_recorded", True),
        is_baseline=is_baseline,
        faster_than_baseline=multiple if multiple and multiple > 1 else None,
        rationale=_rationale(entry, multiple, is_baseline, run, ref, usual),
        method=run.spec["timing"].get("method"),
        method_note=method_note(run, usual),
    )


def _rationale(entry: Ranked, multiple: float | None, is_baseline: bool, run: Run, ref: ImplementationRef,
               usual: str | None = None) -> list[str]:
    lines = []
    if entry.tied:
        lines.append(f"Tied at rank {entry.rank}: the runs' confidence intervals overlap or medians differ by < 1%.")
    if entry.within_noise:
        lines.append("Within noise of the row above: their p20–p80 intervals overlap.")
    if multiple and multiple > 1:
        lines.append(f"{multiple:.2f}× faster than the baseline.")
    if is_baseline:
        lines.append("The source's designated baseline implementation.")
    lines.append(EVIDENCE_SENTENCES[run.evidence])
    note = method_note(run, usual) if usual else None
    if note:
        lines.append(note)
    if not ref.usable:
        lines.extend(r["sentence"] for r in ref.not_usable_reasons)
    if not run.spec["source"].get("time_zone_recorded", True):
        lines.append("Observed time as the source wrote it; time zone not recorded by the source.")
    return lines


# --- the page ---------------------------------------------------------------------------------


def operation_page(
    catalog: Catalog, slug: str, *, workload: str | None = None, cohort: str | None = None, now: datetime | None = None
) -> OperationPage:
    data = load_operation(catalog, slug)
    return build_operation_page(data, workload=workload, cohort=cohort, now=now or datetime.now(UTC))


def _workload_choices(data: OperationData, eligible_by_workload: dict[str, int]) -> list[WorkloadChoice]:
    order = axis_order(data.operation)
    return [
        WorkloadChoice(
            key=d,
            eligible_runs=n,
            floor_bytes=floor_bytes(data, d),
            canonical=tuple(data.workloads[d]["spec"]["axes"].get(a, 0) for a in order),
        )
        for d, n in eligible_by_workload.items()
    ]


def _pick_workload(data: OperationData, requested: str | None, eligible_by_workload: dict[str, int]) -> str | None:
    if requested:
        for digest in data.workloads:
            if requested in (digest, workload_key(digest)):
                return digest
        raise BadSelection(f"workload {requested!r} is not a workload of {data.slug}; pick one from the workload list")
    return default_workload(_workload_choices(data, eligible_by_workload))


def _pick_cohort(data: OperationData, requested: str | None, cohorts: list[Cohort]) -> Cohort | None:
    if requested:
        for c in cohorts:
            if requested in (c.key, cohort_key_short(c.key)):
                return c
        raise BadSelection(
            f"cohort {requested!r} is not a cohort of the selected workload; pick one from Current records"
        )
    choices = []
    for c in cohorts:
        gpu = data.gpu_of(c.environment)
        first = min((r.observed_at for r in c.eligible), default=None)
        choices.append(
            CohortChoice(
                c.key,
                len(c.eligible),
                data.protocols[c.protocol]["spec"]["timed_region"],
                gpu.slug if gpu else None,
                first,
            )
        )
    key = default_cohort(choices, registry.priority_gpus())
    return next((c for c in cohorts if c.key == key), None)


def build_operation_page(
    data: OperationData, *, workload: str | None, cohort: str | None, now: datetime
) -> OperationPage:
    all_cohorts = cohorts_of(data)
    eligible = [r for r in data.runs if r.eligible]
    eligible_by_workload: dict[str, int] = defaultdict(int)
    for r in eligible:
        eligible_by_workload[r.workload] += 1
    if cohort and not workload:
        match = next((c for c in all_cohorts.values() if cohort in (c.key, cohort_key_short(c.key))), None)
        workload = match.workload if match else None
        if match is None:
            raise BadSelection(f"cohort {cohort!r} is not a cohort of {data.slug}")
    selected_workload = _pick_workload(data, workload, eligible_by_workload)
    workload_cohorts = [c for c in all_cohorts.values() if c.workload == selected_workload and c.eligible]
    if cohort and not any(cohort in (c.key, cohort_key_short(c.key)) for c in workload_cohorts):
        raise BadSelection(f"cohort {cohort!r} is not a cohort of the selected workload; pick one from Current records")
    selected = _pick_cohort(data, cohort, workload_cohorts)
    rows = ranked_rows(data, selected, now) if selected else []
    meta = data.operation["metadata"]
    page = OperationPage(
        slug=data.slug,
        title=meta.get("title", data.slug),
        description=meta.get("description", ""),
        digest=data.digest,
        digest_short=short_digest(data.digest),
        family=data.operation["spec"]["family"],
        eligible_runs=len(eligible),
        semantics=_semantics(data),
        workloads=_workload_summaries(data, eligible_by_workload, selected_workload, selected, all_cohorts),
        selected_workload=workload_key(selected_workload) if selected_workload else None,
        cohorts=[_cohort_summary(data, c, selected) for c in _ordered(data, workload_cohorts)],
        selected_cohort=cohort_key_short(selected.key) if selected else None,
        cohort_line=_cohort_line(data, selected) if selected else None,
        headline=_headline(data, selected, rows, all_cohorts, now) if selected else [],
        fastest_by_language=_fastest_by_language(rows),
        coverage_gaps=_coverage_gaps(data, workload_cohorts),
        floor=_floor_view(data, selected, rows) if selected else None,
        ranked=rows,
        not_ranked=_not_ranked(data, selected) if selected else [],
        scaling=scaling_chart(data, selected, all_cohorts) if selected else None,
        implementations=_implementation_summaries(data, selected, rows),
        sources=_sources(data),
        shapes=shape_table(data, selected, all_cohorts) if selected else None,
        not_measured=not_measured(data, selected, all_cohorts) if selected else [],
        json_url=_json_url(data.slug, selected_workload, selected),
        generated_for=now,
    )
    return page


def _json_url(slug: str, workload: str | None, cohort: Cohort | None) -> str:
    query = []
    if workload:
        query.append(f"workload={workload_key(workload)}")
    if cohort:
        query.append(f"cohort={cohort_key_short(cohort.key)}")
    return f"/api/v1/operations/{slug}" + ("?" + "&".join(query) if query else "")


def _semantics(data: OperationData) -> dict:
    spec = data.operation["spec"]
    return {
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
        "flops": spec.get("flops"),
    }


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
        eligible_by_workload, key=lambda d: tuple(data.workloads[d]["spec"]["axes"].get(a, 0) for a in order)
    )
    return [
        WorkloadSummary(
            key=workload_key(d),
            digest=d,
            label=workload_label(data.operation, data.workloads[d]),
            axes=data.workloads[d]["spec"]["axes"],
            dtypes=data.workloads[d]["spec"]["dtypes"],
            params=data.workloads[d]["spec"].get("params", {}),
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
            MODE_ORDER.get(data.protocols[c.protocol]["spec"]["timed_region"], 9),
            gpu_label(data.environments[c.environment]),
            c.key,
        )

    return sorted(cohorts, key=key)


def _cohort_summary(data: OperationData, cohort: Cohort, selected: Cohort | None) -> CohortSummary:
    leader = cohort.leader
    return CohortSummary(
        key=cohort_key_short(cohort.key),
        label=cohort_label(data.environments[cohort.environment], data.protocols[cohort.protocol]),
        gpu=gpu_label(data.environments[cohort.environment]),
        mode=data.protocols[cohort.protocol]["spec"]["timed_region"],
        native=cohort.native,
        best_ns=leader.median_ns if leader else None,
        best_implementation=implementation_title(data.implementations[leader.implementation]) if leader else None,
        best_run_id=leader.run_id if leader else None,
        eligible_runs=len(cohort.eligible),
        evidence=leader.evidence if leader else None,
        selected=selected is not None and cohort.key == selected.key,
    )


def _cohort_line(data: OperationData, cohort: Cohort) -> dict:
    protocol = data.protocols[cohort.protocol]
    last = max(r.observed_at for r in cohort.eligible)
    return {
        "profile": "Source-native comparison" if cohort.native else "KernelIndex runner comparison",
        "gpu": gpu_label(data.environments[cohort.environment]),
        "workload": workload_label(data.operation, data.workloads[cohort.workload]),
        "protocol": protocol_label(protocol),
        "protocol_digest": cohort.protocol,
        "environment_digest": cohort.environment,
        "statistic": protocol["spec"].get("statistic", "median"),
        "results": len(cohort.eligible),
        "last_observed": last,
        "record_history": f"/records?cohort={cohort_key_short(cohort.key)}",
        "cohort_key": cohort.key,
    }


def _headline(
    data: OperationData, cohort: Cohort, rows: list[RankedRow], all_cohorts: dict[str, Cohort], now: datetime
) -> list[HeadlineSlot]:
    if not rows:
        return []
    label = cohort_label(data.environments[cohort.environment], data.protocols[cohort.protocol])
    leader = rows[0]
    slots = []
    word = leader.evidence.capitalize()
    if leader.implementation.usable:
        slots.append(_slot("fastest_usable", f"Fastest {leader.evidence} · usable today", leader, None, cohort, label))
    else:
        best_usable = next((r for r in rows if r.implementation.usable), None)
        if best_usable:
            slots.append(
                _slot(
                    "best_usable", "Best usable", best_usable, best_usable.median_ns / leader.median_ns, cohort, label
                )
            )
        slots.append(
            _slot("fastest_not_usable", f"Fastest {leader.evidence} · not usable as-is", leader, None, cohort, label)
        )
    del word
    verified = _fastest_verified(data, cohort, all_cohorts, now)
    if verified:
        slots.append(verified)
    return slots


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


def _fastest_verified(
    data: OperationData, selected: Cohort, all_cohorts: dict[str, Cohort], now: datetime
) -> HeadlineSlot | None:
    candidates = [
        c
        for c in all_cohorts.values()
        if c.workload == selected.workload
        and c.key != selected.key
        and c.leader
        and c.leader.evidence in ("verified", "replicated")
    ]
    if not candidates:
        return None
    best = min(candidates, key=lambda c: c.leader.median_ns)  # type: ignore[union-attr]
    rows = ranked_rows(data, best, now)
    label = cohort_label(data.environments[best.environment], data.protocols[best.protocol])
    slot = _slot(
        "fastest_verified",
        f"Fastest verified · {gpu_label(data.environments[best.environment])}",
        rows[0],
        None,
        best,
        label,
    )
    floors = floor_for(data, best.workload, best.environment, best.protocol)
    if floors:
        slot.floor_ratio = floors[0].ratio(rows[0].median_ns)
    return slot


def _fastest_by_language(rows: list[RankedRow]) -> list[LanguageLeader]:
    seen: dict[str, LanguageLeader] = {}
    for row in rows:
        lang = row.implementation.language
        if lang not in seen:
            seen[lang] = LanguageLeader(
                lang, row.implementation.title, row.median_ns, row.rank_label, row.vs_first, row.run_id
            )
    return list(seen.values()) if len(seen) >= 2 else []


def _coverage_gaps(data: OperationData, cohorts: list[Cohort]) -> list[str]:
    covered = {data.gpu_of(c.environment).slug for c in cohorts if data.gpu_of(c.environment)}  # type: ignore[union-attr]
    return [registry.gpus()[g].short for g in registry.priority_gpus() if g not in covered]


REGION_FLOOR_WORDS = {
    "forward": "every input read once and every output written once (gathers count only the rows that can be touched)",
    "backward": "the upstream gradients and the inputs the backward needs read once, every gradient written once "
                "(saved intermediates are not compulsory)",
    "forward+backward": "every input and upstream gradient read once, every output and gradient written once",
}


def _floor_view(data: OperationData, cohort: Cohort, rows: list[RankedRow]) -> FloorView | None:
    floors = floor_for(data, cohort.workload, cohort.environment, cohort.protocol)
    if floors is None or not rows:
        return None
    datasheet, measured = floors
    record = rows[0].median_ns
    bound = (
        "no arithmetic formula for this family: bandwidth floor only"
        if not data.operation["spec"].get("flops")
        else "flops from the operation's declared formula"
    )
    return FloorView(
        datasheet=datasheet.to_json(),
        measured=measured.to_json() if measured else None,
        record_ratio=datasheet.ratio(record),
        measured_record_ratio=measured.ratio(record) if measured else None,
        explanation=(
            f"floor-v1 ({datasheet.region}): {REGION_FLOOR_WORDS[datasheet.region]}; {bound}. "
            f"A lower bound, not evidence: {format_duration(datasheet.floor_ns)}."
        ),
    )


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
    leader = rows[0].median_ns if rows else None
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
                vs_leader=best.median_ns / leader if best and leader else None,
                best_run_id=best.run_id if best else None,
                evidence=best.evidence if best else None,
            )
        )
    return sorted(
        summaries, key=lambda s: (s.best_ns_in_cohort is None, s.best_ns_in_cohort or 0, s.implementation.slug)
    )


def _sources(data: OperationData) -> list[SourceSummary]:
    by_source: dict[str, list[Run]] = defaultdict(list)
    for run in data.runs:
        by_source[run.source].append(run)
    summaries = []
    for name, runs in sorted(by_source.items()):
        manifest = data.sources.get(name, {})
        spec = manifest.get("spec", {})
        summaries.append(
            SourceSummary(
                name,
                len(runs),
                max(r.observed_at for r in runs),
                title=manifest.get("metadata", {}).get("title"),
                url=spec.get("url"),
                license=spec.get("license"),
                attribution=spec.get("attribution"),
            )
        )
    return summaries


def load_operation_runs(catalog: Catalog, slug: str) -> OperationData:
    """Lower-level access for the resolver: the loaded runs with policy facts already derived."""
    return load_operation(catalog, slug)


__all__ = ["BadSelection", "NotFound", "OperationPage", "operation_page", "operations_index", "load_operation_runs"]
