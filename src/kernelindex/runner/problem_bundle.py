"""A problem-module campaign's results → one signed runner bundle (see ``problem_records`` for what each
manifest says). Every asked implementation of every problem becomes a run, whatever its outcome."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from kernelindex import registry
from kernelindex.domain.canonical import canonical_bytes
from kernelindex.domain.manifests import BenchmarkProtocol, ExecutionEnvironment, ImplementationRevision, digest_of
from kernelindex.runner import records
from kernelindex.runner.problem_records import (
    IMPLEMENTATIONS,
    PROCESS_STATUSES,
    ProblemCase,
    ProblemResultError,
    ProblemRuns,
    correctness_json,
    floor_ns,
    implementation_manifest,
    protocol_manifest,
    samples_blob,
    timing_json,
)
from kernelindex.trust.bundles import VerifiedBundle, write_bundle
from kernelindex.trust.keys import load_private_key

NO_DEVICE_TIME = "no GPU activity in the call's trace"


class _Builder:
    """Each shared manifest once: implementations by (operation, key, torch), protocols by policy."""

    def __init__(self, environments: dict[str, ExecutionEnvironment], runner: dict[str, str]) -> None:
        self.environments, self.runner = environments, runner
        self.project = registry.project_manifest("pytorch")
        self.out = ProblemRuns(manifests=[records.source_manifest(), self.project])
        self.statuses: Counter[str] = Counter()
        self._seen: dict[str, Any] = {}

    def once(self, key: str, make: Any) -> Any:
        if key not in self._seen:
            self._seen[key] = make()
            self.out.manifests.append(self._seen[key])
        return self._seen[key]

    def implementation(self, case: ProblemCase, key: str, torch_version: str) -> ImplementationRevision:
        return self.once(f"impl {digest_of(case.operation)} {key} {torch_version}",
                         lambda: implementation_manifest(case.operation, key, torch_version, self.project))

    def protocol(self, policy: dict[str, Any], stream: bool) -> BenchmarkProtocol:
        return self.once(f"protocol {stream} {canonical_bytes(policy).decode()}",
                         lambda: protocol_manifest(policy, stream=stream))

    def environment(self, result: dict[str, Any]) -> ExecutionEnvironment:
        found = self.environments.get(result.get("environment", ""))
        if found is None:
            raise ProblemResultError(f"{result.get('file')}: environment {result.get('environment')} was not recorded "
                                     "by the campaign (environments/<digest>.json)")
        return self.once(f"env {digest_of(found)}", lambda: found)


def timed_by_v4(result: dict[str, Any]) -> bool:
    """Whether a problem's result is protocol v4's: the campaign says so (``runner_protocol``, on every result, a
    killed process's too), or a timing carries stream facts. Results made before v4 say neither: v3."""
    if result.get("runner_protocol") == records.STREAM_VERSION:
        return True
    entries = (result.get("implementations") or {}).values()
    return any("stream" in ((e.get("timing") or {}).get("v4") or {}) for e in entries)


def _outcome(result: dict[str, Any], key: str) -> tuple[str, dict[str, Any] | None]:
    """(status, the implementation's entry) for one asked implementation."""
    if result.get("status") in PROCESS_STATUSES:
        return result["status"], None
    entry = result["implementations"].get(key)
    if entry is None:
        return "runtime_error", None
    status = entry["verdict"]["status"]
    if status == "passed" and "timing" not in entry:
        return "runtime_error", entry
    return status, entry


def _add_run(b: _Builder, case: ProblemCase, result: dict[str, Any], key: str) -> None:
    env = b.environment(result)
    product = env.spec.hardware.product
    status, entry = _outcome(result, key)
    impl = b.implementation(case, key, env.spec.software.get("torch", "unknown"))
    timing: dict[str, Any] = {}
    artifacts: dict[str, str] = {}
    detail = result.get("detail", "")
    if status == "passed" and entry is not None:
        blob = samples_blob(impl, case.workload, entry["timing"], result["observed_at"])
        timing = timing_json(key, entry, blob, result["policy"]["min_samples"])
        floor = floor_ns(case, product)
        if timing["median_ns"] < 1:
            status, detail, timing = "runtime_error", NO_DEVICE_TIME, {}
        else:
            artifacts["samples"] = timing["samples_digest"]
            b.out.samples.append(blob)
            if floor is not None and timing["median_ns"] < floor:
                status = "suspected_reward_hack"
            timing["raw"].update(sharing_raw(result, entry))
    verdict = entry["verdict"] if entry is not None else None
    title = IMPLEMENTATIONS[key][1]
    b.out.manifests.append(records.run_manifest(
        implementation=impl, workload=case.workload, protocol=b.protocol(result["policy"], timed_by_v4(result)),
        environment=env,
        status=status, timing=timing, correctness=correctness_json(verdict, detail),
        observed_at=_instant(result["observed_at"]),
        external_id=f"{result['campaign']}/{case.operation.slug}/{case.level}-{case.number}/forward/{key}",
        runner=b.runner, artifacts=artifacts,
        title=f"{title} · kernelbench {case.level}/{case.number} · forward"))
    b.statuses[status] += 1


def sharing_raw(result: dict[str, Any], entry: dict[str, Any]) -> dict[str, str]:
    """How the GPU was shared while this run was made (several problem processes per GPU under the GPU lock)
    and whether its compile time came after one of Inductor's cache hits: said in the run, never hidden."""
    raw: dict[str, str] = {}
    workers = int(result.get("workers_per_gpu", 1))
    if workers > 1:
        raw["gpu_sharing"] = (
            f"{workers} problem processes per GPU; every GPU phase of each (transfers, input draws, references, "
            "checks, first calls, Inductor benchmarks, warm-up, timing) under one exclusive GPU lock (fcntl), so "
            "none overlapped this run's timing; host-side figures may carry the other workers' CPU load")
    hits = {k: v for k, v in (entry.get("compile") or {}).get("cache_counters", {}).items() if "hit" in k and v}
    if hits:
        raw["compile_cache_hits"] = ", ".join(f"{k} {v}" for k, v in sorted(hits.items()))
    return raw


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def problem_runs(cases: dict[str, ProblemCase], results: list[dict[str, Any]],
                 environments: dict[str, ExecutionEnvironment], runner: dict[str, str]) -> ProblemRuns:
    """``cases`` by problem file digest; ``results`` as the campaign wrote them (one per problem)."""
    b = _Builder(environments, runner)
    for result in sorted(results, key=lambda r: (r.get("file", ""), r.get("digest", ""))):
        case = cases.get(result.get("digest", ""))
        if case is None:
            raise ProblemResultError(f"{result.get('file')}: problem {result.get('digest')} is not in the case list")
        for key in result["implementations_asked"]:
            if key not in IMPLEMENTATIONS:
                raise ProblemResultError(f"{case.file}: unknown implementation {key!r}")
            b.once(f"op {digest_of(case.operation)}", lambda c=case: c.operation)
            b.once(f"wl {digest_of(case.workload)}", lambda c=case: c.workload)
            _add_run(b, case, result, key)
    b.out.statuses = dict(b.statuses)
    return b.out


def write_problem_bundle(runs: ProblemRuns, out: Path, key_path: Path, runner_name: str) -> VerifiedBundle:
    if not runs.runs():
        raise ProblemResultError("no results to bundle")
    return write_bundle(out, runs.manifests, runs.samples, key=load_private_key(key_path), runner_name=runner_name)
