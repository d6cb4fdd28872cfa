"""One verification session on the local GPU: probe the environment once, verify each operation,
write one signed bundle per operation. Used by ``ki verify`` and by ``kernelindex.campaigns.measure``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from kernelindex.domain.manifests import ExecutionEnvironment, OperationSpec, WorkloadCase
from kernelindex.policy.ceilings import best_sizes, ceilings_over_sizes
from kernelindex.policy.floor import Ceilings
from kernelindex.runner.campaign import (
    OperationResult,
    campaign_id,
    replace_result_bundle,
    verify_operation,
    write_result_bundle,
)
from kernelindex.runner.cuda import (
    CudaDevice,
    copy_bandwidth,
    do_bench_median_ns,
    gemm_ceiling,
    read_write_bandwidth,
)
from kernelindex.runner.environment import Probe, cached_probe, environment_manifest, keep_probe, probe
from kernelindex.runner.step_limit import StepLimit
from kernelindex.runner.stream_ceilings import min_call_ns, stream_ceiling_table
from kernelindex.runner.timing import TimingPolicy
from kernelindex.trust.bundles import VerifiedBundle

# (operation, workload cases, adapter keys or None for all, regions by workload digest or None for all)
Plan = list[tuple[OperationSpec, list[WorkloadCase], list[str] | None, dict[str, tuple[str, ...]] | None]]


@dataclass
class Session:
    probe: Probe
    environment: ExecutionEnvironment
    copy_bandwidth: float | None
    ceilings: Ceilings | None = None
    results: list[OperationResult] = field(default_factory=list)
    bundles: list[VerifiedBundle] = field(default_factory=list)


class _ProgressEvents:
    """Rich progress: one bar over all cases, one over the steps of the current case."""

    def __init__(self, progress: Progress | None, console: Console | None, total_cases: int) -> None:
        self.progress, self.console = progress, console
        self.overall = progress.add_task("cases", total=total_cases) if progress else None
        self.case = progress.add_task("", total=1) if progress else None

    def __call__(self, kind: str, data: dict[str, Any]) -> None:
        if self.progress is None or self.case is None or self.overall is None:
            return
        if kind == "case":
            self.progress.reset(self.case, total=data["steps"], description=f"  {data['label']}")
        elif kind == "step":
            self.progress.update(self.case, description=f"  {data['label']}")
            self.progress.advance(self.case)
        elif kind == "case_done":
            self.progress.update(self.case, completed=self.progress.tasks[self.case].total)
            self.progress.advance(self.overall)
        elif kind in ("skipped", "warning") and self.console is not None:
            text = f"{data['adapter']}: {data['reason']}" if kind == "skipped" else data["message"]
            self.progress.console.print(Text.assemble((kind, "yellow"), f" {text}"), highlight=False)


def run_session(
    plan: Plan, *, key_path: Path, runner_name: str, key_id: str, out_dirs: list[Path],
    min_samples: int = 100, time_budget_s: float = 4.0, calls_per_sample: int = 10, use_graphs: bool = True,
    console: Console | None = None, do_bench: bool = True, write_bundles: bool = True, host_calls: int = 50,
    test_device_product: str | None = None, hard_limit_s: float = 0.0, limit: StepLimit | None = None,
    on_event: Callable[[str, dict[str, Any]], None] | None = None,
    on_checkpoint: Callable[[OperationResult, VerifiedBundle], None] | None = None,
) -> Session:
    """``test_device_product``: run on the CPU test device instead of CUDA (tests of the work loop).
    ``limit``: a reached step limit ends the session after the cut operation's finished regions are written.
    With ``limit`` (a campaign step), each operation's bundle is also rewritten after every finished region
    (``replace_result_bundle``) and ``on_checkpoint(result, bundle)`` told, so a step killed outright (a signal
    it could not handle in time) still leaves every finished region signed on disk.
    ``on_event``: every event of the verification too (a campaign's log lines)."""
    device, found = _device(calls_per_sample, use_graphs, test_device_product)
    do_bench = do_bench and test_device_product is None
    environment = environment_manifest(found)
    spec = environment.spec
    bandwidth = spec.copy_bandwidth_bytes_per_s or found.copy_bandwidth_bytes_per_s
    ceilings = Ceilings(bandwidth, spec.read_bandwidth_bytes_per_s, spec.write_bandwidth_bytes_per_s) \
        if bandwidth else None
    session = Session(probe=found, environment=environment, copy_bandwidth=found.copy_bandwidth_bytes_per_s,
                      ceilings=ceilings)
    policy = TimingPolicy(min_samples=min_samples, time_budget_ns=int(time_budget_s * 1e9), host_calls=host_calls,
                          hard_limit_ns=int(hard_limit_s * 1e9))
    runner = {"name": runner_name, "key_id": key_id}
    campaign = campaign_id()
    total = sum(len(entry[1]) for entry in plan)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, disable=console is None) as progress:
        progress_events = _ProgressEvents(progress if console is not None else None, console, total)

        def events(kind: str, data: dict[str, Any]) -> None:
            progress_events(kind, data)
            if on_event is not None:
                on_event(kind, data)

        for (operation, cases, keys, regions), out in zip(plan, out_dirs, strict=True):
            written: list[VerifiedBundle] = []
            checkpoint = _checkpoint(out, key_path, runner_name, written, on_checkpoint)
            result = verify_operation(
                operation, cases, keys, device=device, environment=session.environment, runner=runner,
                policy=policy, calls_per_sample=calls_per_sample, campaign=campaign,
                do_bench=do_bench_median_ns if do_bench else None, on_event=events, regions=regions,
                ceilings=ceilings, limit=limit, checkpoint=checkpoint if limit is not None and write_bundles else None,
            )
            session.results.append(result)
            if result.runs() and write_bundles:
                # The last checkpoint may already hold every run; the final write is the bundle of record.
                write = replace_result_bundle if written else write_result_bundle
                session.bundles.append(write(result, out, key_path, runner_name))
            if result.cut:
                break
    return session


def _checkpoint(out: Path, key_path: Path, runner_name: str, written: list[VerifiedBundle],
                on_checkpoint: Callable[[OperationResult, VerifiedBundle], None] | None,
                ) -> Callable[[OperationResult], None]:
    """After a finished region: the operation's bundle so far, replacing the last one (``written`` holds it)."""
    def checkpoint(partial: OperationResult) -> None:
        if not partial.runs():  # every adapter skipped: no bundle, as at the end
            return
        bundle = replace_result_bundle(partial, out, key_path, runner_name)
        written[:] = [bundle]
        if on_checkpoint is not None:
            on_checkpoint(partial, bundle)
    return checkpoint


def _device(calls_per_sample: int, use_graphs: bool, test_product: str | None) -> tuple[Any, Probe]:
    if test_product is not None:
        from kernelindex.runner.cpu_device import CpuTestDevice, cpu_test_probe

        return CpuTestDevice(test_product, calls_per_sample), cpu_test_probe(test_product)
    device = CudaDevice(calls_per_sample=calls_per_sample, use_graphs=use_graphs)
    cached = cached_probe()
    if cached is not None:  # an earlier process of this campaign measured this GPU (KI_PROBE_CACHE)
        return device, cached
    # v4: every ceiling kernel at every size, timed as runs are; the environment also records, per kernel, the
    # best over the sizes (policy/ceilings) and the size it was best at.
    figures = stream_ceiling_table(device)
    best = ceilings_over_sizes(figures)
    if best is None:  # no size fitted: the single 1 GiB probe, as before the sweep
        return device, probe(copy_bandwidth(device), *read_write_bandwidth(device), gemm_ceiling(device))
    found = probe(best.copy, best.read, best.write, gemm_ceiling(device), best_sizes(figures))
    found.ceiling_table = [(f.kernel, f.bytes, f.bandwidth_bytes_per_s) for f in figures]
    found.min_call_ns = min_call_ns(device)
    keep_probe(found)
    return device, found
