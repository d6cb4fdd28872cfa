"""Problem-module results → a signed runner bundle (runner.problem_bundle), without torch or a GPU: the
results are what problem_process and campaigns/kernelbench.py write, with CUPTI-shaped timings.
Every asked implementation becomes a run (a killed process: ``timeout`` for each); v3's fields come
through; a median under the problem's physical floor is ``suspected_reward_hack``; the implementations
carry the KernelBench import's names for the same configurations."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kernelindex.domain.manifests import BenchmarkProtocol, ExecutionEnvironment, build, digest_of
from kernelindex.runner import problem_bundle, problem_records
from kernelindex.runner.problem_bundle import problem_runs, write_problem_bundle
from kernelindex.runner.problem_records import IMPLEMENTATIONS, ProblemCase, ProblemResultError
from kernelindex.sources.kernelbench import map_kernelbench
from kernelindex.sources.kernelbench.read import KernelBenchData, ProblemSet
from kernelindex.sources.kernelbench.runs import CONFIGURATIONS
from kernelindex.trust import keys
from kernelindex.trust.bundles import verify_directory

MATMUL = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, A, B):
        return torch.matmul(A, B)

N = 4096

def get_inputs():
    return [torch.rand(N, N), torch.rand(N, N)]

def get_init_inputs():
    return []
'''
DIGEST = "sha256:" + hashlib.sha256(MATMUL.encode()).hexdigest()
POLICY = {"warmup_calls": 10, "warmup_time_ns": 50_000_000, "min_samples": 100, "max_samples": 2000,
          "target_rse": 0.005, "time_budget_ns": 1_000_000_000, "host_calls": 20, "hard_limit_ns": 20_000_000_000}


@pytest.fixture(scope="module")
def case() -> ProblemCase:
    data = KernelBenchData()
    data.problems = {DIGEST: MATMUL}
    data.sets["problems/new"] = ProblemSet("problems/new", "a" * 40, {"level1/1_Square_matmul.py": DIGEST})
    square = {"dtype": "fp32", "shape": [4096, 4096]}
    counted = {DIGEST: {"inputs": [{"name": "A", **square}, {"name": "B", **square}], "parameters": [],
                        "outputs": [{"name": "output", **square}], "flops": 2 * 4096 ** 3, "scalars": {}}}
    manifests = {m.kind: m for m in map_kernelbench(data, counted).manifests}
    return ProblemCase(1, 1, "level1/1_Square_matmul.py", manifests["OperationSpec"], manifests["WorkloadCase"])


@pytest.fixture(scope="module")
def environment() -> ExecutionEnvironment:
    spec = {"hardware": {"vendor": "NVIDIA", "product": "NVIDIA H200", "architecture": "sm_90"},
            "software": {"torch": "2.9.1", "torch.backends.cudnn.allow_tf32": "True"}}
    return build("ExecutionEnvironment", spec, {"title": "NVIDIA H200 · torch 2.9.1"})


def _timing(median_ns: int, n: int = 100) -> dict[str, Any]:
    device = [median_ns + (i % 5) for i in range(n)]
    return {"method": "cupti-device-time", "device_ns": device, "host_ns": [median_ns * 2] * 20,
            "activities": [[v + 500, 0, 0] for v in device], "stop_reason": "relative standard error <= 0.50%",
            "fallback_reason": None, "warmup_calls": 12, "cross_check": ["cuda_graph_replay", median_ns * 1.01, None],
            "host_cost": [median_ns * 1.05, 9_000.0], "peak_bytes": 67_108_864}


def _result(environment: ExecutionEnvironment, implementations: dict[str, Any], **extra: Any) -> dict[str, Any]:
    passed = {"status": "passed", "relative_error": 1e-7, "tolerance": 1e-4, "reference": "float64 on the CPU",
              "detail": "", "checks": 2}
    return {"status": "done", "digest": DIGEST, "file": "level1/1_Square_matmul.py", "policy": POLICY,
            "environment": digest_of(environment), "campaign": "20261202T090000Z",
            "observed_at": "2026-12-02T09:00:00Z",
            "implementations_asked": list(implementations),
            "implementations": {k: {"verdict": passed, "compile_ns": 31e9 if k != "eager" else None, "timing": t}
                                for k, t in implementations.items()}, **extra}


def test_v3_runs_under_the_imports_names_and_a_median_under_the_floor_is_suspect(
        case: ProblemCase, environment: ExecutionEnvironment, tmp_path: Path) -> None:
    result = _result(environment, {"eager": _timing(2_500_000), "torch-compile": _timing(1_000)})
    out = problem_runs({DIGEST: case}, [result], {digest_of(environment): environment},
                       {"name": "r", "key_id": "sha256:" + "0" * 64})
    assert out.statuses == {"passed": 1, "suspected_reward_hack": 1}  # 2·4096³ flops cannot run in 1 µs
    implementations = {digest_of(m): m for m in out.manifests if m.kind == "ImplementationRevision"}
    runs = {implementations[r.spec.implementation].metadata.name: r.spec for r in out.runs()}
    slug = case.operation.slug
    assert set(runs) == {f"{slug}-eager", f"{slug}-inductor-default"}
    eager = runs[f"{slug}-eager"]
    assert eager.workload == digest_of(case.workload) and eager.timing.median_ns == 2_500_002
    assert eager.timing.cross_check is not None and eager.timing.cross_check.agrees is True
    assert eager.timing.host is not None and not eager.timing.host.bound and eager.timing.span_median_ns == 2_500_502
    assert eager.timing.min_samples == 100 and eager.timing.under_sampled is None
    assert runs[f"{slug}-inductor-default"].timing.secondary == {"compile_ns": 31_000_000_000}  # never the figure
    key, _, _ = keys.generate("problem-runner", tmp_path / "key")
    runner = keys.load_public_key(key.with_name(keys.PUBLIC_KEY_FILE))
    signed = problem_runs({DIGEST: case}, [result], {digest_of(environment): environment},
                          {"name": runner.name, "key_id": runner.key_id})
    write_problem_bundle(signed, tmp_path / "bundle", key, runner.name)
    bundle = verify_directory(tmp_path / "bundle")
    assert bundle.counts()["BenchmarkRun"] == 2 and bundle.counts()["OperationSpec"] == 1


def test_a_killed_process_is_a_timeout_run_for_every_asked_implementation(
        case: ProblemCase, environment: ExecutionEnvironment) -> None:
    result = {**_result(environment, {}), "status": "timeout", "implementations_asked": ["eager", "torch-compile"],
              "detail": "the problem's process ran past its time limit (300 s) and was killed"}
    del result["implementations"]
    out = problem_runs({DIGEST: case}, [result], {digest_of(environment): environment},
                       {"name": "r", "key_id": "sha256:" + "0" * 64})
    assert [r.spec.status for r in out.runs()] == ["timeout", "timeout"]
    assert all(not r.spec.correctness.checked and "time limit" in (r.spec.correctness.detail or "")
               for r in out.runs())
    assert all(r.spec.timing.median_ns is None for r in out.runs())


def test_results_must_name_a_known_problem_and_a_recorded_environment(
        case: ProblemCase, environment: ExecutionEnvironment) -> None:
    result = _result(environment, {"eager": _timing(2_500_000)})
    with pytest.raises(ProblemResultError, match="not in the case list"):
        problem_runs({}, [result], {digest_of(environment): environment}, {"name": "r", "key_id": "k"})
    with pytest.raises(ProblemResultError, match="was not recorded"):
        problem_runs({DIGEST: case}, [result], {}, {"name": "r", "key_id": "k"})


def test_implementation_titles_are_the_imports() -> None:
    for configuration, title, _ in IMPLEMENTATIONS.values():
        assert CONFIGURATIONS[configuration][0] == title


class _FakeCuda:
    """The CUDA device's v3 extras, with a host cost that fails (a call that cannot be repeated)."""

    def cross_check(self, call: Any, no_capture: str | None = None) -> tuple[str, float, str | None]:
        return ("per_call_events", 99.0, no_capture) if no_capture else ("cuda_graph_replay", 101.0, None)

    def host_cost(self, call: Any, calls: int) -> tuple[float, float]:
        raise RuntimeError("the call cannot run twice")

    def peak_memory_bytes(self, call: Any) -> int:
        return 4096


def test_the_child_keeps_what_the_device_offers_and_says_what_failed() -> None:
    import torch

    from kernelindex.runner.problem_process import _v3_extras

    model = torch.nn.Linear(2, 2)
    cross, host, peak, error = _v3_extras(_FakeCuda(), lambda: None, 20, model)
    assert cross == ("cuda_graph_replay", 101.0, None) and host is None and peak is None
    assert error == "RuntimeError: the call cannot run twice"
    assert _v3_extras(object(), lambda: None, 20, model) == (None, None, None, "")  # the CPU test device offers none

    def rebinding() -> None:  # KernelBench 3/33: each forward replaces a tensor its model keeps
        model.state = torch.zeros(2)

    rebinding()  # the timing ran it before the extras
    method, _, reason = _v3_extras(_FakeCuda(), rebinding, 20, model)[0]
    assert method == "per_call_events" and "replaces tensors its model keeps between calls (state)" in reason


def test_a_run_made_on_a_shared_gpu_says_so_and_a_compile_after_a_cache_hit_too(
        case: ProblemCase, environment: ExecutionEnvironment, tmp_path: Path) -> None:
    alone = _result(environment, {"eager": _timing(2_500_000), "torch-compile": _timing(2_400_000)})
    shared = _result(environment, {"eager": _timing(2_500_000), "torch-compile": _timing(2_400_000)},
                     workers_per_gpu=3)
    shared["implementations"]["torch-compile"]["compile"] = {"lock_wait_ns": 0, "compiled_unlocked": True,
                                                              "cache_counters": {"fxgraph_cache_hit": 1}}
    runner = {"name": "r", "key_id": "sha256:" + "0" * 64}
    raws = []
    for result in (alone, shared):
        out = problem_runs({DIGEST: case}, [result], {digest_of(environment): environment}, runner)
        implementations = {digest_of(m): m.metadata.name for m in out.manifests if m.kind == "ImplementationRevision"}
        raws.append({implementations[r.spec.implementation].split("-")[-1]: r.spec.timing.raw for r in out.runs()})
    assert all("gpu_sharing" not in raw for raw in raws[0].values())
    assert all("3 problem processes per GPU" in raw["gpu_sharing"] for raw in raws[1].values())
    assert raws[1]["default"]["compile_cache_hits"] == "fxgraph_cache_hit 1"
    assert "compile_cache_hits" not in raws[1]["eager"]


# `ki runner campaign supersede --no-grad`: KernelBench runs timed with autograd on ("…-problem-module-forward") are
# superseded by the re-measurement under torch.no_grad() ("…-forward-no-grad"), by workload, region and line.
ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    from kernelindex.campaigns import supersede

    return supersede


def _old_protocol(policy: dict[str, Any], stream: bool = False) -> BenchmarkProtocol:
    """The protocol the runner-10-13 bundles carry: the spec without the words that say the call runs under
    torch.no_grad(), under the old name."""
    spec = problem_records.protocol_manifest(policy).model_dump(mode="json")["spec"]
    spec["timer"] = spec["timer"].removesuffix(problem_records.NO_GRAD_CALL)
    return build("BenchmarkProtocol", spec, {"name": "kernelindex-runner-v3-problem-module-forward", "title": "old"})


def _bundle(tmp_path: Path, name: str, result: dict, case: ProblemCase, environment: ExecutionEnvironment) -> Path:
    key = tmp_path / "key" / keys.PRIVATE_KEY_FILE
    if not key.exists():
        key, _, _ = keys.generate("kernelindex-h200-runner-99", tmp_path / "key")
    runner = keys.load_public_key(key.with_name(keys.PUBLIC_KEY_FILE))
    runs = problem_runs({DIGEST: case}, [result], {digest_of(environment): environment},
                        {"name": runner.name, "key_id": runner.key_id})
    write_problem_bundle(runs, tmp_path / "verified" / name, key, runner.name)
    return tmp_path / "verified" / name


def test_no_grad_runs_supersede_the_autograd_ones_of_the_same_line(
        case: ProblemCase, environment: ExecutionEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _result(environment, {"eager": _timing(2_500_000), "torch-compile": _timing(2_400_000)})
    with monkeypatch.context() as patch:
        patch.setattr(problem_bundle, "protocol_manifest", _old_protocol)
        old = _bundle(tmp_path, "old", result, case, environment)
    # The new eager run is under-sampled: it must not replace a ranked run.
    fresh = _result(environment, {"eager": _timing(2_300_000, n=40), "torch-compile": _timing(2_200_000)})
    new = _bundle(tmp_path, "new", fresh, case, environment)
    (tmp_path / "supersessions.jsonl").write_text("")
    script = _script()
    out = [json.loads(line) for line in script.lines([new], "2026-12-03T00:00:00Z", no_grad=True,
                                                     verified=tmp_path / "verified",
                                                     supersessions=tmp_path / "supersessions.jsonl")]
    old_runs, new_runs = script._runs(old), script._runs(new)
    compile_key = next(k for k in new_runs if k[2].endswith("inductor-default"))
    assert [(o["new"], o["old"]) for o in out] == [(new_runs[compile_key][0], old_runs[compile_key][0])]
    assert "torch.no_grad()" in out[0]["reason"]
    with pytest.raises(SystemExit, match="not a bundle of"):  # the old protocol's bundle cannot be the new side
        script.lines([old], "2026-12-03T00:00:00Z", no_grad=True, verified=tmp_path / "verified",
                     supersessions=tmp_path / "supersessions.jsonl")


def test_an_under_sampled_no_grad_run_replaces_an_autograd_run_that_was_not_ranked_either(
        case: ProblemCase, environment: ExecutionEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Level 3's recurrent networks stop at the hard limit with or without autograd: the run measured as
    KernelBench times it takes the old one's place, unranked as it was."""
    with monkeypatch.context() as patch:
        patch.setattr(problem_bundle, "protocol_manifest", _old_protocol)
        old = _bundle(tmp_path, "old", _result(environment, {"eager": _timing(2_500_000, n=40)}), case, environment)
    new = _bundle(tmp_path, "new", _result(environment, {"eager": _timing(2_300_000, n=75)}), case, environment)
    (tmp_path / "supersessions.jsonl").write_text("")
    script = _script()
    out = [json.loads(line) for line in script.lines([new], "2026-12-03T00:00:00Z", no_grad=True,
                                                     verified=tmp_path / "verified",
                                                     supersessions=tmp_path / "supersessions.jsonl")]
    [(key, (old_digest, _))] = script._runs(old).items()
    assert [(o["old"], o["new"]) for o in out] == [(old_digest, script._runs(new)[key][0])]


def test_a_rerun_after_a_runner_fix_supersedes_the_failed_runs_of_the_bundle_named_only(
        case: ProblemCase, environment: ExecutionEnvironment, tmp_path: Path) -> None:
    died = {"status": "runtime_error", "digest": DIGEST, "file": "level1/1_Square_matmul.py", "policy": POLICY,
            "environment": digest_of(environment), "campaign": "20261203T160000Z",
            "observed_at": "2026-12-03T16:00:00Z", "implementations_asked": ["eager"],
            "detail": "the problem's process ended with status 1: RuntimeError: mat1 is on cpu"}
    failed = _bundle(tmp_path, "failed", died, case, environment)
    passed = _bundle(tmp_path, "passed", _result(environment, {"eager": _timing(2_500_000)}), case, environment)
    rerun = _bundle(tmp_path, "rerun", _result(environment, {"eager": _timing(2_400_000)}), case, environment)
    (tmp_path / "supersessions.jsonl").write_text("")
    script = _script()

    def superseded(old: Path, reason: str | None = "the reference is a twin") -> list[dict[str, str]]:
        return [json.loads(line) for line in script.lines([rerun], "2026-12-03T18:00:00Z", rerun_of=old,
                                                          reason=reason, verified=tmp_path / "verified",
                                                          supersessions=tmp_path / "supersessions.jsonl")]

    [(key, (failed_digest, _))] = script._runs(failed).items()
    assert superseded(failed) == [{"new": script._runs(rerun)[key][0], "old": failed_digest,
                                   "reason": "the reference is a twin", "at": "2026-12-03T18:00:00Z"}]
    assert superseded(passed) == []  # a ranked run is evidence beside the re-run, never replaced by it
    with pytest.raises(SystemExit, match="needs --reason"):
        superseded(failed, None)


def test_a_rerun_replaces_an_under_sampled_run_only_with_a_ranked_one(
        case: ProblemCase, environment: ExecutionEnvironment, tmp_path: Path) -> None:
    """A case the campaign under-sampled (paged decode's ragged prefill at 63 sequences: 75 samples at the hard
    limit beside a host-bound baseline) is re-run on its own; only a run that reaches the minimum replaces it."""
    short = _bundle(tmp_path, "short", _result(environment, {"eager": _timing(2_500_000, n=75)}), case, environment)
    again_short = _bundle(tmp_path, "again", _result(environment, {"eager": _timing(2_400_000, n=80)}), case,
                          environment)
    full = _bundle(tmp_path, "full", _result(environment, {"eager": _timing(2_400_000)}), case, environment)
    (tmp_path / "supersessions.jsonl").write_text("")
    script = _script()

    def superseded(new: Path) -> list[tuple[str, str]]:
        return [(o["old"], o["new"]) for o in map(json.loads, script.lines(
            [new], "2026-12-03T18:00:00Z", rerun_of=short, reason="re-run alone", verified=tmp_path / "verified",
            supersessions=tmp_path / "supersessions.jsonl"))]

    [(key, (short_digest, _))] = script._runs(short).items()
    assert superseded(again_short) == []
    assert superseded(full) == [(short_digest, script._runs(full)[key][0])]


def test_every_shipped_problem_module_protocol_has_a_spec_of_its_own() -> None:
    """A protocol's identity is its spec's digest, not its name: a renamed protocol with the same spec (the
    no_grad re-measurement, first bundled under the autograd-on runs' spec) would be stored as the earlier one,
    and its runs would carry the earlier runs' note. (The curated operations' protocols share specs across
    operations on purpose: one protocol per region, named per operation.)"""
    from kernelindex.domain.manifests import parse_manifest

    names: dict[str, set[str]] = {}
    for manifests in (ROOT / "src" / "kernelindex" / "data" / "verified").glob("*/manifests.jsonl"):
        for line in manifests.read_text().splitlines():
            if '"BenchmarkProtocol"' in line and "problem-module" in line:
                protocol = parse_manifest(json.loads(line))
                names.setdefault(digest_of(protocol), set()).add(str(protocol.metadata.name))
    shared = {digest: sorted(n) for digest, n in names.items() if len(n) > 1}
    assert shared == {}
    assert any("kernelindex-runner-v3-problem-module-forward-no-grad" in n for n in names.values())
