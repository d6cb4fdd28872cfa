"""A verification campaign: one or more operations on the local GPU, one signed bundle each."""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernelindex import registry
from kernelindex.domain.manifests import (
    BenchmarkRun,
    ExecutionEnvironment,
    ImplementationRevision,
    Manifest,
    OperationSpec,
    WorkloadCase,
    digest_of,
)
from kernelindex.policy.floor import Ceilings
from kernelindex.runner import records
from kernelindex.runner.adapters import select
from kernelindex.runner.definitions import Adapter, OperationDef
from kernelindex.runner.ops import operations
from kernelindex.runner.step_limit import CampaignCut, StepLimit
from kernelindex.runner.stream_setup import StreamDevice
from kernelindex.runner.timing import TimingPolicy
from kernelindex.runner.verify import CaseOutcome, Context, Event, RunnerDevice, case_label, verify_case
from kernelindex.trust.bundles import VerifiedBundle, write_bundle
from kernelindex.trust.content import measurement_only
from kernelindex.trust.keys import load_private_key


@dataclass
class OperationResult:
    operation: OperationSpec
    manifests: list[Manifest] = field(default_factory=list)
    samples: list[bytes] = field(default_factory=list)
    cases: list[CaseOutcome] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # adapter key → why it did not run
    cut: bool = False  # the step's time limit ended it: ``cases`` are the ones finished (runner/step_limit)
    # The case being measured when the limit came, with the regions it finished before (each region is a
    # protocol of its own: its runs are complete, and they are in ``manifests``); None when no region finished.
    partial: CaseOutcome | None = None

    def runs(self) -> list[BenchmarkRun]:
        return [m for m in self.manifests if isinstance(m, BenchmarkRun)]

    def finished_regions(self) -> dict[str, list[str]]:
        """Case label → the regions whose runs this result holds (whole cases and the cut case's part)."""
        found: dict[str, list[str]] = {}
        for case in [*self.cases, *([self.partial] if self.partial is not None else [])]:
            regions = found.setdefault(case_label(case.workload), [])
            regions += [o.region for o in case.impls if o.region not in regions]
        return found


def campaign_id(now: datetime | None = None) -> str:
    """When the campaign started, and a random part: a run's external id starts with it, and no two runs may share
    one (catalog/publish.py), even when two runners measure one case within the same second."""
    return (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def operation_def(slug: str) -> OperationDef:
    """The runner's definition of an operation; a specific error for one it does not know or cannot verify."""
    known = operations()
    if slug not in known:
        raise ValueError(f"the runner has no definition of operation {slug!r}; it verifies {', '.join(sorted(known))}")
    op = known[slug]
    if op.unavailable:
        raise ValueError(f"operation {slug} cannot be verified on the runner: {op.unavailable}")
    return op


def case_regions(op: OperationDef, wanted: list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    """The regions to time: ``wanted`` (in the operation's order) limited to what the runner supports."""
    if not wanted:
        return op.regions
    unknown = [r for r in wanted if r not in op.regions]
    if unknown:
        raise ValueError(f"{op.slug}: the runner cannot time region {', '.join(unknown)}; "
                         f"it times {', '.join(op.regions)}")
    return tuple(r for r in op.regions if r in wanted)


def available_adapters(op: OperationDef, keys: list[str] | None) -> tuple[list[Adapter], dict[str, str]]:
    usable, skipped = [], {}
    for adapter in select(op, keys):
        reason = adapter.missing()
        if reason is None:
            usable.append(adapter)
        else:
            skipped[adapter.key] = reason
    return usable, skipped


def verify_operation(
    operation: OperationSpec,
    workloads: list[WorkloadCase],
    adapter_keys: list[str] | None,
    *,
    device: RunnerDevice,
    environment: ExecutionEnvironment,
    runner: dict[str, str],
    policy: TimingPolicy,
    calls_per_sample: int,
    campaign: str,
    do_bench: Callable[[Callable[[], object]], float | None] | None = None,
    on_event: Event | None = None,
    adapters: list[Adapter] | None = None,
    regions: dict[str, tuple[str, ...]] | None = None,
    op: OperationDef | None = None,
    ceilings: Ceilings | None = None,
    limit: StepLimit | None = None,
    checkpoint: Callable[[OperationResult], None] | None = None,
) -> OperationResult:
    """Check and time every available adapter on every workload case of one operation, in each
    case's regions (``regions``: by workload digest; default: every region the runner times). When
    ``limit`` is reached (its SIGTERM, or its deadline at a safe point inside the region) the region being
    measured is dropped: the result holds the finished cases and, in
    ``partial``, the regions of the cut case finished before it. ``checkpoint(result)`` is called after every
    finished region, with that region's runs already in the result (a campaign writes its bundle there, so a
    process killed outright still leaves every finished region on disk)."""
    op = op or operation_def(operation.slug)
    result = OperationResult(operation)
    if adapters is None:
        adapters, result.skipped = available_adapters(op, adapter_keys)
    for key, reason in result.skipped.items():
        if on_event:
            on_event("skipped", {"adapter": key, "reason": reason})
    wanted = {digest_of(w): (regions or {}).get(digest_of(w), op.regions) for w in workloads}
    used = [r for r in op.regions if any(r in rs for rs in wanted.values())]
    stream = isinstance(device, StreamDevice)  # protocol v4 where the device times stream time
    protocols = {r: records.protocol_manifest(operation, policy, calls_per_sample, r, stream) for r in used}
    impls = [(a, records.implementation_manifest(a, operation)) for a in adapters]
    projects = {a.project: registry.project_manifest(a.project) for a in adapters}
    result.manifests = [records.source_manifest(), operation, *workloads, *projects.values(),
                        *(impl for _, impl in impls), *protocols.values(), environment]
    ctx = Context(operation=operation, op=op, protocols=protocols, environment=environment, device=device,
                  policy=policy, runner=runner, campaign=campaign, do_bench=do_bench, on_event=on_event,
                  ceilings=ceilings, safe_point=limit.check if limit is not None else None)
    _verify_cases(ctx, result, workloads, wanted, impls, limit, checkpoint)
    return result


def _verify_cases(
    ctx: Context, result: OperationResult, workloads: list[WorkloadCase], wanted: dict[str, tuple[str, ...]],
    impls: list[tuple[Adapter, ImplementationRevision]], limit: StepLimit | None,
    checkpoint: Callable[[OperationResult], None] | None,
) -> None:
    """Each case in turn, its runs added to ``result`` region by region (see ``verify_operation``)."""
    def region_done(case: CaseOutcome, region: str) -> None:
        for outcome in case.impls:
            if outcome.region != region:
                continue
            if outcome.run is not None:
                result.manifests.append(outcome.run)
            if outcome.samples_blob is not None:
                result.samples.append(outcome.samples_blob)
        result.partial = case
        if limit is not None:
            limit.reinstall()  # a library the region ran may have replaced the SIGTERM handler
        if checkpoint is not None:
            checkpoint(result)

    for index, workload in enumerate(workloads):
        _check_workload(ctx.operation, workload)
        case_rs = tuple(r for r in ctx.op.regions if r in wanted[digest_of(workload)])
        ctx.emit("case", index=index, total=len(workloads), label=case_label(workload),
                 steps=len(impls) + len(case_rs))
        try:
            with limit.case() if limit is not None else nullcontext():
                case = verify_case(ctx, workload, impls, case_rs, on_region=region_done)
        except CampaignCut:
            result.cut = True  # ``partial``: this case with the regions it finished, or None
            ctx.emit("cut", index=index, total=len(workloads))
            break
        result.partial = None
        result.cases.append(case)
        ctx.emit("case_done", index=index, case=case)


def _check_workload(operation: OperationSpec, workload: WorkloadCase) -> None:
    if workload.spec.operation != digest_of(operation):
        raise ValueError(f"workload {digest_of(workload)} belongs to another operation than {operation.metadata.name}")


def write_result_bundle(result: OperationResult, out_dir: Path, key_path: Path, runner_name: str) -> VerifiedBundle:
    """The result's runs and what they reference (a result cut part-way also holds the cases and protocols it
    never reached, which a bundle may not carry: ``trust.content.check_measured``)."""
    return write_bundle(out_dir, measurement_only(result.manifests), result.samples, key=load_private_key(key_path),
                        runner_name=runner_name)


def replace_result_bundle(result: OperationResult, out_dir: Path, key_path: Path, runner_name: str) -> VerifiedBundle:
    """Write the result's bundle to ``out_dir``, replacing the one an earlier checkpoint of the same result
    wrote there. The bundle is written and verified beside it (``.NAME.new``) and swapped in by renames, so a
    process killed at any instant leaves a whole bundle: ``out_dir`` itself, or (killed between the two
    renames) ``.NAME.old`` beside a whole ``.NAME.new``; the next write clears both."""
    staging, old = out_dir.with_name(f".{out_dir.name}.new"), out_dir.with_name(f".{out_dir.name}.old")
    for leftover in (staging, old):
        shutil.rmtree(leftover, ignore_errors=True)
    bundle = write_result_bundle(result, staging, key_path, runner_name)
    if out_dir.exists():
        out_dir.rename(old)
    staging.rename(out_dir)
    shutil.rmtree(old, ignore_errors=True)
    return bundle


def select_workloads(workloads: list[WorkloadCase], selector: str) -> list[WorkloadCase]:
    """``reference`` / ``all``: every case given (the catalog's reference cases); otherwise a digest
    prefix (``sha256:`` optional) or axis bindings such as ``seq=2048,hidden=8192``."""
    if selector in ("reference", "all"):
        return list(workloads)
    wanted = selector.removeprefix("sha256:")
    if "=" not in wanted:
        found = [w for w in workloads if digest_of(w).removeprefix("sha256:").startswith(wanted)]
    else:
        binding = dict(part.split("=", 1) for part in wanted.split(","))
        found = [w for w in workloads if all(str(w.spec.axes.get(k)) == v for k, v in binding.items())]
    if not found:
        raise ValueError(f"no workload case matches {selector!r}")
    return found


def outcome_rows(result: OperationResult) -> list[dict[str, Any]]:
    """One row per run, for tables and JSON output."""
    rows = []
    for case in [*result.cases, *([result.partial] if result.partial is not None else [])]:
        for o in case.impls:
            timing = o.run.spec.timing if o.run is not None else None
            rows.append({
                "case": case_label(case.workload), "region": o.region, "implementation": o.adapter.key,
                "status": o.status,
                "median_ns": timing.median_ns if timing else None,
                "p20_ns": timing.p20_ns if timing else None, "p80_ns": timing.p80_ns if timing else None,
                "do_bench_ns": timing.secondary.get("do_bench_median_ns") if timing else None,
                "host_ns": timing.host_ns if timing else None,
                "floor_ns": None if case.floors.get(o.region) is None else round(case.floors[o.region] or 0),
                "compile_ns": timing.secondary.get("compile_ns") if timing else None,
                "plan_ns": timing.secondary.get("plan_ns") if timing else None,
                "peak_bytes": int(timing.raw["call_peak_memory_bytes"]) if timing and
                "call_peak_memory_bytes" in timing.raw else None,
                "method": timing.method if timing else None,
                "relative_error": o.run.spec.correctness.relative_error if o.run is not None else None,
                "detail": "; ".join(d for d in ((o.check.detail_for(o.region) if o.check else ""), o.error or "") if d),
                **_v3_row(timing),
            })
    return rows


def _v3_row(timing: Any) -> dict[str, Any]:
    """Protocol v3's figures of a run, flat (the campaign's self-check table reads them)."""
    if timing is None or timing.method != "cupti-device-time":
        return {}
    check, host = timing.cross_check, timing.host
    return {
        "samples": timing.samples, "span_ns": timing.span_median_ns, "under_sampled": timing.under_sampled,
        "check_method": check.method if check else None, "check_ns": check.median_ns if check else None,
        "check_agrees": check.agrees if check else None,
        "wall_ns": host.wall_ns if host else None, "cpu_ns": host.cpu_ns if host else None,
        "syncs": host.syncs_per_call if host else None, "host_bound": host.bound if host else None,
    }
