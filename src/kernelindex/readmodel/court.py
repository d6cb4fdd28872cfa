"""The reproduction court's facts of one loaded operation (``policy.reproduction``): each run as a claim,
each reported run with verified twins given its ``Reproduction``, and a reported figure beyond 2× of ours
given the ``NOT_REPRODUCED`` reason, so it leaves rankings and records on every page at once; and a source's
court per GPU product (``gpu_court``), which its reproduction page lays out."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

import orjson

from kernelindex import registry, urls
from kernelindex.domain.manifests import manifest_json
from kernelindex.domain.sources import RUNNER_SOURCE
from kernelindex.domain.units import format_duration
from kernelindex.policy.device_time import timing_statistic
from kernelindex.policy.eligibility import Eligibility
from kernelindex.policy.evidence import VERIFIED_LEVELS, grad_mode
from kernelindex.policy.reproduction import (
    GENERATOR_PARAMS,
    VERDICTS,
    Claim,
    ProtocolFacts,
    not_reproduced_reason,
    reproductions,
)
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.labels import implementation_slug
from kernelindex.readmodel.operation_data import OperationData, Run


def protocol_facts(data: OperationData, run: Run) -> ProtocolFacts:
    spec = data.protocols[run.protocol].spec
    of = timing_statistic(run.spec.timing.method)
    statistic = f"{spec.statistic} of {of} time" if of else spec.statistic
    harness = spec.harness.name + (f" {spec.harness.version}" if spec.harness.version else "")
    return ProtocolFacts(harness, statistic, spec.timer, spec.l2_policy, spec.input_regeneration,
                         grad_mode(spec.timer), not spec.native)


def _workload_key(data: OperationData, workload: str) -> tuple[str, str]:
    def compute() -> tuple[str, str]:
        spec = dict(manifest_json(data.workloads[workload])["spec"])
        params = dict(spec.get("params") or {})
        generator = " ".join(str(params.pop(name)) for name in GENERATOR_PARAMS if name in params)
        spec["params"] = params
        return orjson.dumps(spec, option=orjson.OPT_SORT_KEYS).decode(), generator
    return data.derived(("court-workload", workload), compute)


def claim_of(data: OperationData, run: Run) -> Claim | None:
    """The run as the court hears it; None when it has no figure to hear (failed, retracted, no value)."""
    if run.status != "passed" or run.median_ns is None or run.median_ns <= 0 or run.retracted is not None:
        return None
    verified = run.evidence in VERIFIED_LEVELS
    if verified and not run.eligible:
        return None  # a superseded or under-sampled verified run is no twin
    if not verified and run.source == RUNNER_SOURCE:
        return None  # a runner's run whose bundle this catalog never checked is no source's claim to hear
    impl = data.implementations[run.implementation]
    key, generator = _workload_key(data, run.workload)
    return Claim(run.digest, implementation_slug(impl), impl.spec.version, key, generator,
                 data.environments[run.environment].spec.hardware.product,
                 data.protocols[run.protocol].spec.timed_region, run.median_ns, protocol_facts(data, run), verified,
                 run.source)


def derive_court(data: OperationData) -> None:
    """Sets each heard reported run's ``reproduction``; a figure not reproduced gets the NOT_REPRODUCED reason."""
    if not any(run.evidence in VERIFIED_LEVELS for run in data.runs):
        return  # nothing to hear against (most operations): no claim is built
    claims = [claim for run in data.runs if (claim := claim_of(data, run)) is not None]
    sheets = {gpu: sheet for gpu in {c.gpu for c in claims} if (sheet := registry.gpu_for_product(gpu)) is not None}
    found = reproductions(claims, sheets)
    by_digest = {run.digest: run for run in data.runs}
    for run in data.runs:
        court = found.get(run.digest)
        if court is None:
            continue
        run.reproduction = court
        for twin in court.twins:
            by_digest[twin].reproduces.append(run.digest)
        if not court.reproduced and run.eligibility is not None:
            reasons = (*run.eligibility.reasons, not_reproduced_reason(court))
            run.eligibility = Eligibility(eligible=False, reasons=reasons)


def reproduction_json(data: OperationData, run: Run) -> dict[str, Any] | None:
    """What a reported run's row and run page show of its hearing: "reported X (their statistic, their harness) ·
    reproduced Y (ours) · Y/X", the verdict, the version heard, the differences and our runs; None when unheard."""
    court = run.reproduction
    if court is None:
        return None
    ids = {r.digest: r for r in data.runs}
    twins = [ids[t] for t in court.twins]
    theirs, ours = protocol_facts(data, run), protocol_facts(data, twins[0])
    label = (f"reported {format_duration(court.reported_ns, 3)} ({theirs.statistic}, {theirs.harness}) · reproduced "
             f"{format_duration(court.reproduced_ns, 3)} ({ours.statistic}, {ours.harness}) · {court.ratio:#.3g}×")
    return {"label": label, "reported_ns": court.reported_ns, "reproduced_ns": court.reproduced_ns,
            "ratio": round(court.ratio, 4), "verdict": court.verdict, "version": court.version,
            "differences": [d.to_json() for d in court.differences],
            "explanation": None if court.reproduced else court.explanation,
            "twins": [{"run_id": t.run_id, "url": urls.run(t.run_id), "median_ns": t.median_ns} for t in twins],
            "court_url": urls.reproduction(run.source)}


def reproduces_json(data: OperationData, run: Run) -> list[dict[str, Any]]:
    """A verified run's side of the court: each reported figure it was heard against, with Y/X and the verdict."""
    ids = {r.digest: r for r in data.runs}
    out = []
    for digest in run.reproduces:
        reported = ids[digest]
        court = reported.reproduction
        if court is not None:
            out.append({"run_id": reported.run_id, "url": urls.run(reported.run_id), "source": reported.source,
                        "reported_ns": court.reported_ns, "reproduced_ns": court.reproduced_ns,
                        "ratio": round(court.ratio, 4), "verdict": court.verdict,
                        "court_url": urls.reproduction(reported.source)})
    return out


@dataclass
class CourtRow(JsonModel):
    run_id: str
    url: str
    operation: str
    operation_title: str
    implementation: str
    gpu: str
    reported_ns: int
    reproduced_ns: int
    ratio: float  # Y/X
    verdict: str
    version: str
    twins: list[str]  # our verified run ids
    differences: list[str]
    explanation: str  # for a figure not reproduced: what can explain it, or "unexplained"


@dataclass
class GpuCourt(JsonModel):
    gpu: str  # the exact product, as the runs name it
    reported: int  # the source's passed figures on it
    remeasured: int
    median_ratio: float | None
    within_10: int
    within_2x: int
    not_reproduced: int
    share_within_10: float | None
    share_within_2x: float | None
    summary: str
    outliers: list[CourtRow] = field(default_factory=list)  # beyond 2×, worst first


def _short(product: str) -> str:
    gpu = registry.gpu_for_product(product)
    return gpu.short if gpu else product


def gpu_court(product: str, reported: int, rows: list[CourtRow]) -> GpuCourt:
    """The court on one GPU product: how many of the source's ``reported`` figures were re-measured, how far
    they hold (by ``policy.reproduction``'s verdicts) and the outliers beyond 2×, worst first."""
    n = len(rows)
    close = sum(1 for r in rows if r.verdict == VERDICTS[0])
    within = sum(1 for r in rows if r.verdict != VERDICTS[2])
    ratio = round(statistics.median(r.ratio for r in rows), 4) if rows else None
    if n:
        summary = (f"{n:,} of {reported:,} reported figures on the {_short(product)} re-measured: median ratio "
                   f"{ratio:#.3g}× (ours / theirs), {close:,} within 10%, {within:,} within 2×, {n - within:,} not "
                   "reproduced.")
    else:
        summary = f"0 re-measured on {_short(product)} yet (of {reported:,} reported figures)."
    outliers = sorted((r for r in rows if r.verdict == VERDICTS[2]), key=lambda r: -max(r.ratio, 1 / r.ratio))
    return GpuCourt(product, reported, n, ratio, close, within, n - within,
                    round(close / n, 4) if n else None, round(within / n, 4) if n else None, summary, outliers)
