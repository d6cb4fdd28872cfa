"""Shipped supersessions: a campaign's new runs replace older runs of the same call (``ki runner campaign
supersede``; the kinds below, each with its reason). By default, runner protocol v2 runs by the v3
re-measurement (issue 19).

For each v3 bundle given, every v2 run of the shipped bundles with the same workload digest, timed
region and implementation line is superseded by the v3 run — only where the v3 run passed and has the
protocol's minimum samples (an under-sampled v3 run never replaces a ranked run). Prints the lines for
src/kernelindex/data/supersessions.jsonl (applied at start-up as the package; docs/reliability.md):

    ki runner campaign supersede --at 2026-12-01T16:30:00Z NEW_BUNDLE... >> src/kernelindex/data/supersessions.jsonl
    ki runner campaign supersede --upstream-one --at … UP1_BUNDLE... >> …   # v3 random-scalar runs instead
    ki runner campaign supersede --no-grad --at … KB_BUNDLE... >> …           # KernelBench runs with autograd on

``--no-grad``: the KernelBench runs of runner keys 10–13 timed the forward with autograd recording (protocol
``…-problem-module-forward``); the re-measurement under ``torch.no_grad()`` (``…-forward-no-grad``, as KernelBench
times it) supersedes them, matched the same way. An under-sampled new run replaces an old run that was not ranked
either (under-sampled or failed): level 3's recurrent networks stop at the hard limit both ways.

``--stream``: protocol v4 bundles (issue 42) supersede every older protocol's run (v1, v2, v3) of the same workload,
region, implementation line and GPU product — an independent check's too, so that a page shows one verified figure
per kernel; the older runs stay visible as history. A KernelBench problem-module bundle of v4
(``…-v4-problem-module-forward-no-grad``) supersedes the v3 no-grad runs of its problems that way, its reason saying
what v4 means for a problem module. ``ki runner campaign ship`` does this by itself for every v4 bundle it ships.

``--rerun-of OLD --reason TEXT``: the runs of bundle OLD that were not ranked (did not pass, or stopped short of the
protocol's minimum samples), superseded by the new bundles' runs of the same workload, region and line that are —
a re-run after a fix of the runner itself, or of a case the campaign had under-sampled (say which in TEXT):

    ki runner campaign supersede --rerun-of …/h200-…-r17 --reason "…" --at … …/h200-…-r17b >> …
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kernelindex.campaigns.selection import SUPERSESSIONS, VERIFIED
from kernelindex.domain.manifests import BenchmarkProtocol, digest_of
from kernelindex.trust.bundles import verify_directory

OUR_RUNNERS = "kernelindex-h200-runner-"
UPSTREAM_REASON = ("re-measured from upstream gradient 1.0 (what loss.backward() sends; issue 19): same workload, "
                   "region and implementation line; the superseded v3 run's backward started from a random scalar")
OLD_KERNELBENCH_PROTOCOL = "kernelindex-runner-v3-problem-module-forward"
NO_GRAD_PROTOCOL = "kernelindex-runner-v3-problem-module-forward-no-grad"
NO_GRAD_REASON = ("re-measured under torch.no_grad(), as KernelBench times it (issue 24): same workload, region and "
                  "implementation line; the superseded run timed the forward with autograd recording")
STREAM_REASON = ("re-measured under runner protocol v4 (stream time: write-back and the gaps between kernels "
                 "included; issue 42): same workload, region, implementation line and GPU; the superseded figure was "
                 "an older protocol's (v3 device time, or graph-replay or per-call-event time)")
STREAM_PROBLEM_PROTOCOL = "kernelindex-runner-v4-problem-module-forward-no-grad"
STREAM_PROBLEM_REASON = (
    "re-measured under runner protocol v4 (issues 42 and 44): the KernelBench problem's forward under "
    "torch.no_grad(), timed as stream time over rotating input sets (the model's parameters not rotated, as a "
    "layer's are not); same workload, implementation line and GPU; the superseded figure was v3's device time, "
    "which the new run keeps beside its figure as kernel busy time")
REASON = ("re-measured under runner protocol v3 (CUPTI device time; issue 19): same workload, region and "
          "implementation line; the v2 figure was graph-replay or per-call-event time")


def _runs(path: Path) -> dict[tuple[str, str, str, str], tuple[str, Any]]:
    """The bundle's runs by (workload, region, implementation line, GPU product): a re-measurement on one GPU
    never replaces a run on another."""
    bundle = verify_directory(path)
    by_digest: dict[str, Any] = {digest_of(m): m for m in bundle.manifests}
    out: dict[tuple[str, str, str, str], tuple[str, Any]] = {}
    runs: list[Any] = bundle.runs()
    for run in runs:
        line = by_digest[run.spec.implementation].metadata.name or run.spec.implementation
        region = by_digest[run.spec.protocol].spec.timed_region
        product = by_digest[run.spec.environment].spec.hardware.product
        out[(run.spec.workload, region, line, product)] = (digest_of(run), run)
    return out


def _ours(path: Path) -> bool:
    """A re-measurement replaces only this project's own runners' runs: an independent check is another
    party's evidence of the same call and stays beside the new run."""
    return verify_directory(path).runner_name.startswith(OUR_RUNNERS)


def _already_superseded(supersessions: Path = SUPERSESSIONS) -> set[str]:
    with supersessions.open() as handle:
        return {json.loads(line)["old"] for line in handle if line.strip()}


def harness_version(path: Path) -> str | None:
    bundle = verify_directory(path)
    versions = {m.spec.harness.version for m in bundle.manifests if isinstance(m, BenchmarkProtocol)}
    return versions.pop() if len(versions) == 1 else None


def _protocol_names(path: Path) -> set[str]:
    return {m.metadata.name or "" for m in verify_directory(path).manifests if m.kind == "BenchmarkProtocol"}


def _replaced(folder: Path, upstream_one: bool, no_grad: bool, stream: bool = False) -> bool:
    """Whether ``folder``'s runs are of the kind the new bundles replace."""
    if stream:  # v4 replaces every older protocol's run, an independent check's too: one figure per kernel
        return harness_version(folder) in ("1", "2", "3")
    if no_grad:
        return _protocol_names(folder) == {OLD_KERNELBENCH_PROTOCOL}
    return harness_version(folder) in (("3",) if upstream_one else ("1", "2"))


def _ranked(run: Any) -> bool:
    return bool(run.spec.status == "passed" and not run.spec.timing.under_sampled)


def _replaces(new: Any, old: Any) -> bool:
    """A passed run replaces an old one; an under-sampled one only an old run that was not ranked either."""
    return bool(new.spec.status == "passed" and (_ranked(new) or not _ranked(old)))


def lines(new_bundles: list[Path], at: str, *, upstream_one: bool = False, no_grad: bool = False,
          rerun_of: Path | None = None, reason: str | None = None, stream: bool = False,
          verified: Path = VERIFIED, supersessions: Path = SUPERSESSIONS) -> list[str]:
    """Supersessions of v1/v2 runs; with ``upstream_one``, of the v3 runs of other bundles instead (the
    random-scalar backward runs that upstream-gradient-1.0 bundles replace); with ``no_grad``, of the KernelBench
    runs timed with autograd on, by the new bundles' runs timed under no_grad (only those); with ``rerun_of``, of
    that bundle's runs that were not ranked, by the new bundles' ranked runs (``reason`` says why)."""
    old: dict[tuple[str, str, str, str], list[tuple[str, Any]]] = {}
    new_names = {path.resolve().name for path in new_bundles}
    done = _already_superseded(supersessions)
    folders = [rerun_of] if rerun_of else sorted(verified.iterdir())
    for folder in folders:
        if (folder.is_dir() and folder.resolve().name not in new_names and (stream or _ours(folder))
                and (rerun_of or _replaced(folder, upstream_one, no_grad, stream))):
            for key, (digest, run) in _runs(folder).items():
                if digest not in done and not (rerun_of and _ranked(run)):
                    old.setdefault(key, []).append((digest, run))
    out: list[str] = []
    if rerun_of and not reason:
        raise SystemExit("--rerun-of needs --reason: what was fixed between the two runs")
    why = (reason if rerun_of else STREAM_REASON if stream else NO_GRAD_REASON if no_grad else UPSTREAM_REASON
           if upstream_one else REASON)
    for path in new_bundles:
        if no_grad and _protocol_names(path) != {NO_GRAD_PROTOCOL}:
            raise SystemExit(f"{path}: not a bundle of {NO_GRAD_PROTOCOL} runs; --no-grad supersedes with those only")
        said = STREAM_PROBLEM_REASON if stream and _protocol_names(path) == {STREAM_PROBLEM_PROTOCOL} else why
        for key, (new_digest, run) in sorted(_runs(path).items()):
            out.extend(json.dumps({"new": new_digest, "old": old_digest, "reason": said, "at": at})
                       for old_digest, old_run in old.get(key, [])
                       if (_ranked(run) if rerun_of else _replaces(run, old_run)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundles", type=Path, nargs="+")
    parser.add_argument("--at", required=True)
    parser.add_argument("--upstream-one", action="store_true",
                        help="supersede other bundles' v3 runs (random-scalar backward) instead of v1/v2 runs")
    parser.add_argument("--no-grad", action="store_true",
                        help="supersede the KernelBench runs timed with autograd on by these no_grad bundles' runs")
    parser.add_argument("--stream", action="store_true",
                        help="v4 bundles: supersede every older protocol's run of the same case and GPU, any runner's")
    parser.add_argument("--rerun-of", type=Path, help="supersede this bundle's runs that were not ranked instead")
    parser.add_argument("--reason", help="with --rerun-of: what was fixed between the two runs")
    args = parser.parse_args(argv)
    for line in lines(args.bundles, args.at, upstream_one=args.upstream_one, no_grad=args.no_grad,
                      rerun_of=args.rerun_of, reason=args.reason, stream=args.stream):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
