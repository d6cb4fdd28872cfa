"""Ranked rows and the facts every read model shows beside a run: its implementation and its floor."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from kernelindex.domain.units import format_duration
from kernelindex.policy.capture import capture_failure_sentence
from kernelindex.policy.evidence import SENTENCES as EVIDENCE_SENTENCES
from kernelindex.policy.ranking import Ranked
from kernelindex.policy.selection import (
    baseline_multiple,
)
from kernelindex.policy.source_flags import AVAILABILITY, source_flag
from kernelindex.policy.staleness import is_stale
from kernelindex.policy.statistics import statistic_word
from kernelindex.readmodel.cohorts import ASIDE_WORDS, Cohort
from kernelindex.readmodel.court import reproduction_json
from kernelindex.readmodel.floors import cohort_floors, own_floors
from kernelindex.readmodel.floors import floor_for as floor_for  # re-exported: run and compare pages read them here
from kernelindex.readmodel.floors import run_floors as run_floors
from kernelindex.readmodel.labels import (
    implementation_slug,
    implementation_title,
    project_title,
)
from kernelindex.readmodel.loading import OperationData, Run
from kernelindex.readmodel.operation_views import ImplementationRef, RankedRow
from kernelindex.readmodel.ranking_notes import host_bound_label
from kernelindex.readmodel.region_work import forward_work_note, skips_floor_traffic


def implementation_ref(data: OperationData, digest: str) -> ImplementationRef:
    impl = data.implementations[digest]
    spec = impl.spec
    project = data.projects.get(spec.project)
    usable = data.usability[digest]
    return ImplementationRef(
        slug=implementation_slug(impl),
        title=implementation_title(impl),
        project=project_title(project) if project else "",
        language=spec.callable.language,
        role=spec.role,
        version=spec.version,
        license=usable.license,
        usable=usable.usable,
        install_command=usable.install_command,
        not_usable_reasons=[r.to_json() for r in usable.reasons],
        source_url=usable.source_url,
        in_place=spec.in_place,
        availability=usable.availability,
    )


def flagged_ref(ref: ImplementationRef, run: Run) -> ImplementationRef:
    """The implementation as this run's row shows it: not usable where the run's own source flags it."""
    flag = source_flag(run.source, run.spec.timing.raw)
    if flag is None:
        return ref
    return replace(ref, usable=False, availability=AVAILABILITY, not_usable_reasons=[flag.to_json(),
                                                                                     *ref.not_usable_reasons])


def run_implementation(data: OperationData, run: Run) -> ImplementationRef:
    """The implementation as every door shows it beside this run (operation rows and run pages here, search answers
    through ``flagged_ref`` over their per-implementation refs): one rule, ``policy.source_flags``."""
    return flagged_ref(implementation_ref(data, run.implementation), run)


def ranked_rows(data: OperationData, cohort: Cohort, now: datetime) -> list[RankedRow]:
    baselines = [  # each baseline's row figure (its replicates summarised), never one fast replicate
        e.item.median_ns for e in cohort.ranked
        if data.implementations[cohort.run(e.item.id).implementation].spec.role == "baseline"
    ]
    floors = cohort_floors(data, cohort)
    usual = usual_method(cohort)
    rows = [_row(data, cohort.run(entry.item.id), entry, baselines, now, usual) for entry in cohort.ranked]
    for item in cohort.aside:  # shown and labelled below the ranking, never in it (issue 43 item 5)
        row = _row(data, cohort.run(item.id), Ranked(item, 0, False, False, None), [], now, usual)  # no margin
        row.rank_label = "—"
        row.rationale.insert(0, ASIDE_SENTENCE)
        rows.append(row)
    for row in rows:
        if others := [cohort.run(d) for d in cohort.replicates.get(row.digest, [])]:
            medians = ", ".join(f"{r.run_id} {format_duration(r.median_ns)}" for r in others)
            row.rationale.append(f"One row per implementation: the median of {len(others) + 1} measurements of it "
                                 f"in this cohort (this run {format_duration(cohort.run(row.digest).median_ns)}; the "
                                 f"others: {medians}).")
    if floors:  # latency cohorts; a memory metric would have no floor ratio or throughput
        for row in (r for r in rows if not skips_floor_traffic(r.region_note)):
            run = cohort.run(row.digest)
            physical = (own_floors(data, run) or floors)[0]
            row.floor_ratio = physical.ratio(row.median_ns)
            rate = physical.throughput(row.median_ns)
            row.throughput, row.throughput_unit = rate if rate else (None, None)
            row.peak_share = physical.peak_share(row.median_ns) if rate else None
    return rows


ASIDE_SENTENCE = ASIDE_WORDS

RowsOf = Callable[[Cohort], list[RankedRow]]  # a cohort's ranked rows, as the operation model keeps them


def ranked_only(rows: list[RankedRow]) -> list[RankedRow]:
    """The rows that hold a rank (the rows shown aside, rank 0, are not candidates for any headline)."""
    return [r for r in rows if r.rank]


METHOD_WORDS = {
    "stream-time": ("stream time (K calls back to back over rotating inputs, per call: in one CUDA graph, or run "
                    "eagerly when the call cannot be captured)"),
    "cupti-device-time": "CUPTI device time (the durations of the call's kernels, copies and sets)",
    "cuda_graph_replay": "CUDA graph replay (no launch cost between calls)",
    "per_call_events": "per-call CUDA events (the call could not be captured in a CUDA graph)",
}


def usual_method(cohort: Cohort) -> str | None:
    """The timing method most of the cohort's eligible runs used (None when no run says)."""
    methods = [r.spec.timing.method for r in cohort.eligible if r.spec.timing.method]
    return max(sorted(set(methods)), key=methods.count) if methods else None


EAGER_STREAM = ("eager: host stalls included — this call synchronises with the host, so it cannot be captured in "
                "a CUDA graph; its stream time is the same calls run eagerly, with what it stalls the stream for on "
                "this host")


def method_note(run: Run, usual: str | None) -> str | None:
    """A sentence for a row timed another way than the rest of its cohort: never a silent mix. A v4 row timed
    eagerly (a call that synchronises with the host) always says so, whatever the rest of its cohort did."""
    method = run.spec.timing.method
    stream = run.spec.timing.stream
    if stream is not None and stream.capture == "eager":
        return EAGER_STREAM[:1].upper() + EAGER_STREAM[1:] + "."
    if not method or not usual or method == usual:
        return None
    why = run.spec.timing.raw.get("capture_failure")
    said = METHOD_WORDS.get(method, method)
    return (f"Timed with {said}; most of this cohort used {METHOD_WORDS.get(usual, usual)}. "
            "Per-call events include each call's launch gaps, so this figure may sit above a graph-replay one."
            + (f" {capture_failure_sentence(why)}" if why else ""))


def _row(data: OperationData, run: Run, entry: Ranked, baselines: list[int], now: datetime,
         usual: str | None = None) -> RankedRow:
    ref = run_implementation(data, run)
    is_baseline = ref.role == "baseline"
    figure = entry.item.median_ns  # the row's figure: its replicates' median where it stands for several
    multiple = None if is_baseline else baseline_multiple(figure, baselines)
    return RankedRow(
        rank=entry.rank,
        rank_label=entry.label,
        tied=entry.tied,
        within_noise=entry.within_noise,
        run_id=run.run_id,
        digest=run.digest,
        implementation=ref,
        median_ns=figure,
        p20_ns=run.p20_ns,
        p80_ns=run.p80_ns,
        vs_first=entry.vs_first,
        evidence=run.evidence,
        observed_at=run.observed_at,
        stale=is_stale(run.observed_at, now),
        time_zone_recorded=run.spec.source.time_zone_recorded,
        is_baseline=is_baseline,
        faster_than_baseline=multiple if multiple and multiple > 1 else None,
        rationale=_rationale(entry, multiple, is_baseline, run, ref, usual, forward_work_note(data, run, how=True)),
        method=run.spec.timing.method,
        method_note=method_note(run, usual),
        replication=run.replication.to_json() if run.replication else None,
        source=run.source,
        runner=run.runner,
        region_note=forward_work_note(data, run),
        host_bound=host_bound_label(run),
        statistic=statistic_word(data.protocols[run.protocol].spec.statistic, run.spec.timing.method),
        reproduction=reproduction_json(data, run),
    )


def _rationale(entry: Ranked, multiple: float | None, is_baseline: bool, run: Run, ref: ImplementationRef,
               usual: str | None = None, region_note: str | None = None) -> list[str]:
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
    if region_note:
        lines.append(region_note)
    if run.replication is not None:
        lines.append(run.replication.sentence)
    note = method_note(run, usual) if usual else None
    if note:
        lines.append(note)
    if not ref.usable:
        lines.extend(r["sentence"] for r in ref.not_usable_reasons)
    if not run.spec.source.time_zone_recorded:
        lines.append("Observed time as the source wrote it; time zone not recorded by the source.")
    return lines
