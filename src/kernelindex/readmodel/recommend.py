"""What to run for an exact workload on a GPU (``ki use``, ``GET /api/v1/use``, the MCP tool
``recommend_kernel`` and the operation page's "Use this" box all render this one answer).

On the asked GPU: the fastest usable implementation in its verified cohort when one exists, else in
its default cohort (docs/design.md §4); when both exist, both answers, each labelled with its cohort. Runs are
never compared across cohorts. When the GPU has no run of the workload in the timed region, the answer
says so, gives the same answers on the nearest measured GPU (the same architecture first, then better
evidence, then fresher evidence, then the closer datasheet bandwidth; readmodel.gaps.nearest_gpu, with
why) and the asked GPU's floor estimate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelindex import urls
from kernelindex.domain.manifests import manifest_json
from kernelindex.domain.units import format_duration
from kernelindex.policy.evidence import SENTENCES as EVIDENCE_SENTENCES
from kernelindex.policy.evidence import VERIFIED_LEVELS
from kernelindex.policy.ratios import ratio
from kernelindex.readmodel.cohorts import Cohort, cohorts_of
from kernelindex.readmodel.floors import gpu_floor, run_floors
from kernelindex.readmodel.gaps import measured_gpus, nearest_gpu
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.labels import cohort_key_short, cohort_label, workload_key, workload_label
from kernelindex.readmodel.loading import OperationData, Run
from kernelindex.readmodel.operation_select import pick_default
from kernelindex.readmodel.operation_views import ImplementationRef, RankedRow
from kernelindex.readmodel.rows import RowsOf, ranked_only
from kernelindex.readmodel.snippets import python_snippet
from kernelindex.registry import GpuSpec


@dataclass
class UseAnswer(JsonModel):
    """The fastest usable implementation in one cohort, as what to run."""

    cohort_kind: str  # verified | default | verified+default
    cohort: str
    cohort_key: str
    cohort_label: str
    gpu: str
    gpu_label: str
    mode: str
    usable_found: bool
    run_id: str
    run_url: str
    implementation: ImplementationRef
    median_ns: int
    median: str
    rank_label: str
    vs_fastest: float | None  # this row's median / the cohort leader's (None when it is the leader)
    evidence: str
    evidence_line: str
    install: str | None
    snippet: str | None
    floor_ns: float | None
    floor_ratio: float | None
    page_url: str
    not_usable_reasons: list[dict] = field(default_factory=list)
    statistic: str = "median"  # what the figure is, from its cohort's protocol (policy.statistics)
    time_ns: int | None = None  # the figure, statistic-neutral; median_ns is its deprecated alias


@dataclass
class NearestGpu(JsonModel):
    gpu: str
    gpu_label: str
    bandwidth_gbps: float
    why: str
    answers: list[UseAnswer]


@dataclass
class Recommendation(JsonModel):
    status: str  # measured | not_measured_on_gpu | not_measured
    message: str
    operation: dict[str, Any]
    workload: dict[str, Any]
    gpu: dict[str, Any]
    mode: str
    answers: list[UseAnswer]
    nearest: NearestGpu | None
    floor: dict[str, Any] | None  # the asked GPU's floor estimate for this workload
    note: str = "Never compared across cohorts: each answer is the fastest usable run inside its own cohort."


def build_recommendation(data: OperationData, digest: str, gpu: GpuSpec, mode: str | None,
                         rows_of: RowsOf) -> Recommendation:
    measured = [c for c in cohorts_of(data).values() if c.workload == digest and c.eligible]
    region = mode or _default_region(data, measured)
    in_region = [c for c in measured if _mode(data, c) == region]
    answers = _answers_on(data, in_region, gpu.slug, rows_of)
    nearest = None if answers else _nearest(data, in_region, gpu, rows_of)
    floor = gpu_floor(data, digest, gpu, region)
    what = f"{data.slug} · {workload_label(data.operation, data.workloads[digest])} · {region}"
    if answers:
        status, message = "measured", f"Measured on {gpu.short} for {what}."
    elif nearest:
        status = "not_measured_on_gpu"
        message = (f"Not measured on {gpu.short} for {what}. Nearest measured GPU: {nearest.gpu_label}; "
                   f"{gpu.short} {floor.name} {format_duration(floor.floor_ns)} (an estimate).")
    else:
        status, message = "not_measured", f"No eligible run of {what} on any GPU."
    return Recommendation(
        status=status, message=message,
        operation={"slug": data.slug, "title": data.title,
                   "url": urls.operation(data.slug)},
        workload={"key": workload_key(digest), "label": workload_label(data.operation, data.workloads[digest]),
                  "axes": dict(data.workloads[digest].spec.axes),
                  "dtypes": dict(data.workloads[digest].spec.dtypes)},
        gpu={"slug": gpu.slug, "label": gpu.short, "name": gpu.name, "bandwidth_gbps": gpu.bandwidth_gbps},
        mode=region, answers=answers, nearest=nearest,
        floor={**floor.to_json(), "label": "estimate, not evidence"},
    )


def _mode(data: OperationData, cohort: Cohort) -> str:
    return data.protocols[cohort.protocol].spec.timed_region


def _gpu_slug(data: OperationData, cohort: Cohort) -> str | None:
    gpu = data.gpu_of(cohort.environment)
    return gpu.slug if gpu else None


def _default_region(data: OperationData, cohorts: list[Cohort]) -> str:
    """Forward when measured (what a model calls first), else the most common region."""
    regions = [_mode(data, c) for c in cohorts]
    if not regions or "forward" in regions:
        return "forward"
    return max(sorted(set(regions)), key=regions.count)


def _answers_on(data: OperationData, cohorts: list[Cohort], gpu: str, rows_of: RowsOf) -> list[UseAnswer]:
    on_gpu = [c for c in cohorts if _gpu_slug(data, c) == gpu]
    if not on_gpu:
        return []
    verified = [c for c in on_gpu if any(r.evidence in VERIFIED_LEVELS for r in c.eligible)]
    picks: list[tuple[str, str | None]] = [
        ("verified", chosen.key if (chosen := pick_default(data, verified)) else None),
        ("default", chosen.key if (chosen := pick_default(data, on_gpu)) else None),
    ]
    if picks[0][1] == picks[1][1]:
        picks = [("verified+default", picks[0][1])]
    by_key = {c.key: c for c in on_gpu}
    return [_answer(data, by_key[key], kind, rows_of) for kind, key in picks if key]


def _answer(data: OperationData, cohort: Cohort, kind: str, rows_of: RowsOf) -> UseAnswer:
    rows = ranked_only(rows_of(cohort)) or rows_of(cohort)
    usable = next((r for r in rows if r.implementation.usable), None)
    row = usable or rows[0]
    run = cohort.run(row.digest)
    floors = run_floors(data, run)
    floor_ns = floors[0].floor_ns if floors else None
    install = row.implementation.install_command
    implementation = manifest_json(data.implementations[run.implementation])["spec"]
    snippet = python_snippet(*data.specs_json(cohort.workload), implementation, install) if usable else None
    gpu = data.gpu_of(cohort.environment)
    env = data.environments[cohort.environment]
    return UseAnswer(
        cohort_kind=kind, cohort=cohort_key_short(cohort.key), cohort_key=cohort.key,
        cohort_label=cohort_label(env, data.protocols[cohort.protocol]),
        gpu=gpu.slug if gpu else "", gpu_label=gpu.short if gpu else env.spec.hardware.product,
        mode=_mode(data, cohort), usable_found=usable is not None, run_id=row.run_id, run_url=urls.run(row.run_id),
        implementation=row.implementation, median_ns=row.median_ns, median=format_duration(row.median_ns, 2),
        rank_label=row.rank_label,
        vs_fastest=None if row is rows[0] else _rounded(ratio(row.median_ns, rows[0].median_ns)),
        evidence=row.evidence, evidence_line=_evidence_line(data, run, row), install=install, snippet=snippet,
        floor_ns=floor_ns, floor_ratio=_rounded(ratio(row.median_ns, floor_ns)),
        page_url=urls.cohort(data.slug, workload_key(cohort.workload), cohort_key_short(cohort.key)),
        not_usable_reasons=[] if usable else list(row.implementation.not_usable_reasons),
        statistic=row.statistic, time_ns=row.median_ns,
    )


def _evidence_line(data: OperationData, run: Run, row: RankedRow) -> str:
    manifest = data.sources.get(run.source)
    source = (manifest.metadata.title if manifest else None) or run.source
    observed = row.observed_at.date().isoformat()
    zone = "" if row.time_zone_recorded else " (time zone not recorded by the source)"
    return f"{row.evidence.capitalize()} · {source} · observed {observed}{zone} · {EVIDENCE_SENTENCES[row.evidence]}"


def _nearest(data: OperationData, cohorts: list[Cohort], asked: GpuSpec, rows_of: RowsOf) -> NearestGpu | None:
    nearest = nearest_gpu(asked, measured_gpus(data, cohorts))
    if nearest is None:
        return None
    best, why = nearest
    return NearestGpu(best.slug, best.short, best.bandwidth_gbps, why, _answers_on(data, cohorts, best.slug, rows_of))


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
