"""KernelBench problem modules under runner protocol v4 (issues 42 and 44), on the CPU test device: the child
ranks each implementation's stream time over R rotating input sets (set 0 the timed draw, the others drawn once
per case under seeds of their own and shared by the implementations), records the model's unrotated bytes and
the kernel busy time; a call that rebinds its model's state is timed eagerly with the reason; the bundle's
protocol is v4's; its runs supersede the v3 no-grad runs of the same problem, line and GPU; and a campaign plan
counts v3 problem-module runs as older than v4."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from test_problem_bundle import DIGEST, POLICY, _bundle, _result, _timing, case, environment  # noqa: E402, F401

from kernelindex.domain.manifests import ExecutionEnvironment, digest_of  # noqa: E402
from kernelindex.runner.cpu_device import CpuTestDevice  # noqa: E402
from kernelindex.runner.problem_bundle import problem_runs  # noqa: E402
from kernelindex.runner.problem_module import Case, Prepared, first_call, load_problem  # noqa: E402
from kernelindex.runner.problem_process import serve  # noqa: E402
from kernelindex.runner.problem_records import ProblemCase  # noqa: E402
from kernelindex.runner.problem_stream import ROTATION_SEED, RotationSets, stream_samplers  # noqa: E402

V4_PROTOCOL = "kernelindex-runner-v4-problem-module-forward-no-grad"
V3_PROTOCOL = "kernelindex-runner-v3-problem-module-forward-no-grad"
LINEAR = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)

    def forward(self, x):
        return torch.relu(self.linear(x)) * 2

def get_inputs():
    return [torch.randn(8, 16)]

def get_init_inputs():
    return [16]
'''
REBINDING = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.i2h = nn.Linear(8, 4)
        self.hidden = torch.randn(2, 4)

    def forward(self, x, initial_hidden):
        self.hidden.copy_(initial_hidden)
        self.hidden = torch.tanh(self.i2h(torch.cat((x, self.hidden), dim=1)))  # KernelBench 3/33's pattern
        return self.hidden

def get_inputs():
    return [torch.randn(2, 4), torch.randn(2, 4)]

def get_init_inputs():
    return []
'''
QUICK = {"min_samples": 20, "max_samples": 20, "warmup_calls": 1, "warmup_time_ns": 0}


def _digest(source: str) -> str:
    return "sha256:" + hashlib.sha256(source.encode()).hexdigest()


def _serve(source: str) -> dict[str, Any]:
    return serve({"source": source, "digest": _digest(source), "device": "cpu", "product": "NVIDIA H100 80GB HBM3",
                  "implementations": ["eager"], "policy": QUICK})


def test_the_child_ranks_stream_time_over_rotating_sets_and_keeps_kernel_busy_beside_it() -> None:
    timing = _serve(LINEAR)["implementations"]["eager"]["timing"]
    stream, busy = timing["v4"]["stream"], timing["v4"]["kernel_busy"]
    assert stream["footprint_bytes"] == 2 * 8 * 16 * 4  # its input and its output, float32
    assert stream["l2_bytes"] == CpuTestDevice.l2_bytes
    assert stream["rotation_sets"] == 4 * CpuTestDevice.l2_bytes // stream["footprint_bytes"] == 16
    assert stream["calls_per_replay"] == 32 and stream["capture"] == "cuda_graph"
    assert stream["unrotated_bytes"] == (16 * 16 + 16) * 4  # the Linear's weight and bias: not rotated
    assert 50_000 <= busy["median_ns"] <= 50_100 and busy["samples"] == 10  # the nominal time, with its ripple
    assert len(timing["device_ns"]) == 20  # one figure per replay


def test_the_sets_are_drawn_once_under_seeds_of_their_own_and_shared_by_the_implementations(
        monkeypatch: pytest.MonkeyPatch) -> None:
    problem = Case(load_problem(LINEAR, _digest(LINEAR)), "cpu")
    seeds: list[int] = []
    draw = Case.inputs
    monkeypatch.setattr(Case, "inputs", lambda self, seed: (seeds.append(seed), draw(self, seed))[1])
    eager = first_call(problem, "eager")
    passed = {"eager": eager, "again": Prepared("again", eager.call, eager.verdict, forward=eager.forward)}
    sets = RotationSets(problem)
    samplers, facts = stream_samplers(CpuTestDevice("H100"), problem, passed, sets)
    r = facts["eager"].rotation.sets
    assert r == facts["again"].rotation.sets == 16
    rotated = seeds[1:]  # the first is the timed draw's (the problem's seed)
    assert seeds[0] == problem.seed and sorted(rotated) == [problem.seed + ROTATION_SEED + i for i in range(1, r)]
    assert set(sets.drawn) == set(rotated)  # each set drawn once for both implementations
    timed = problem.timed_inputs()[0]
    values = [timed, *(sets.drawn[s][0] for s in sorted(sets.drawn))]
    assert all(not torch.equal(a, b) for i, a in enumerate(values) for b in values[i + 1:])  # distinct draws
    assert all(len(s.calls) == r for s in samplers.values())  # type: ignore[attr-defined]
    sets.release()
    assert sets.drawn == {}


def test_a_model_that_rebinds_its_state_is_timed_eagerly_and_says_why() -> None:
    from types import SimpleNamespace

    from kernelindex.domain.runner_specs import StreamReplay
    from kernelindex.readmodel.stream_panel import _ranks_sentence

    stream = _serve(REBINDING)["implementations"]["eager"]["timing"]["v4"]["stream"]
    sentence = _ranks_sentence(SimpleNamespace(spec=SimpleNamespace(timing=SimpleNamespace(  # type: ignore[arg-type]
        stream=StreamReplay(**stream)))))
    assert "must not be captured in a CUDA graph (the reason below)" in sentence
    assert "parameters and buffers (0.0 MiB) are not rotated" in sentence
    assert stream["capture"] == "eager"
    assert stream["capture_failure"].startswith("graph capture not attempted: each call replaces tensors its model "
                                                "keeps between calls (hidden)")
    plain = _serve(LINEAR)["implementations"]["eager"]["timing"]["v4"]["stream"]
    assert plain["capture"] == "cuda_graph" and "capture_failure" not in plain


def _v4_timing(median_ns: int, n: int = 100) -> dict[str, Any]:
    """A CUDA-shaped v4 timing as the child writes it: stream samples, v4's fields."""
    timing = {**_timing(median_ns, n), "method": "stream-time", "activities": []}
    timing["v4"] = {"stream": {"capture": "cuda_graph", "calls_per_replay": 32, "rotation_sets": 1,
                               "footprint_bytes": 3 * 64 * 2**20, "l2_bytes": 50 * 2**20, "unrotated_bytes": 0},
                    "kernel_busy": {"median_ns": median_ns - 40_000, "samples": 50}}
    return timing


def test_a_v4_result_becomes_runs_of_the_v4_protocol_and_an_older_result_stays_v3(
        case: ProblemCase, environment: ExecutionEnvironment) -> None:  # noqa: F811
    runner = {"name": "r", "key_id": "sha256:" + "0" * 64}
    v4 = problem_runs({DIGEST: case}, [_result(environment, {"eager": _v4_timing(2_500_000)})],
                      {digest_of(environment): environment}, runner)
    [protocol] = [m for m in v4.manifests if m.kind == "BenchmarkProtocol"]
    assert protocol.metadata.name == V4_PROTOCOL and protocol.spec.harness.version == "4"
    assert "stream time" in protocol.spec.timer and "torch.no_grad()" in protocol.spec.timer
    assert "not rotated" in protocol.spec.l2_policy and "unrotated_bytes" in (protocol.metadata.description or "")
    [run] = v4.runs()
    timing = run.spec.timing
    assert timing.method == "stream-time" and timing.median_ns == 2_500_002 and run.spec.status == "passed"
    assert timing.stream is not None and timing.stream.unrotated_bytes == 0 and timing.stream.rotation_sets == 1
    assert timing.kernel_busy is not None and timing.kernel_busy.median_ns == 2_460_000
    assert timing.cross_check is not None and timing.min_samples == 100
    from types import SimpleNamespace

    from kernelindex.readmodel.stream_panel import stream_panel

    panel = stream_panel(SimpleNamespace(spec=run.spec, ceiling_check=None))  # type: ignore[arg-type]
    assert panel is not None and panel["kernel_busy_ns"] == 2_460_000
    assert "Stream time ranks: 32 calls back to back over 1 rotating input/output set" in panel["ranks"]
    assert "parameters" not in panel["ranks"]  # none in a matmul problem: nothing to say
    samples = json.loads(v4.samples[0])
    assert samples["format"] == "kernelindex-samples/v3" and len(samples["stream_ns"]) == 100
    assert samples["kernel_busy_median_ns"] == 2_460_000
    killed = {**_result(environment, {}), "status": "timeout", "implementations_asked": ["eager"],
              "runner_protocol": "4", "detail": "killed"}
    timed_out = problem_runs({DIGEST: case}, [killed], {digest_of(environment): environment}, runner)
    assert [m.metadata.name for m in timed_out.manifests if m.kind == "BenchmarkProtocol"] == [V4_PROTOCOL]
    v3 = problem_runs({DIGEST: case}, [_result(environment, {"eager": _timing(2_500_000)})],
                      {digest_of(environment): environment}, runner)
    assert [m.metadata.name for m in v3.manifests if m.kind == "BenchmarkProtocol"] == [V3_PROTOCOL]


def test_the_cpu_childs_result_bundles_as_v4(case: ProblemCase, environment: ExecutionEnvironment) -> None:  # noqa: F811
    child = _serve(LINEAR)
    result = {**_result(environment, {}), **child, "status": "done", "digest": DIGEST,
              "implementations_asked": ["eager"], "runner_protocol": "4"}
    [run] = problem_runs({DIGEST: case}, [result], {digest_of(environment): environment},
                         {"name": "r", "key_id": "sha256:" + "0" * 64}).runs()
    stream = run.spec.timing.stream
    assert stream is not None and stream.rotation_sets == 16 and stream.unrotated_bytes == (16 * 16 + 16) * 4
    assert run.spec.timing.kernel_busy is not None


# --- shipping: supersession and the campaign plan ------------------------------------------------------------

def _shipped(case: ProblemCase, environment: ExecutionEnvironment,  # noqa: F811
             tmp_path: Path) -> tuple[Path, Path]:
    old = _bundle(tmp_path, "h200-kernelbench-level1-eager-torch-compile-20261203-r14",
                  _result(environment, {"eager": _timing(2_500_000), "torch-compile": _timing(2_400_000)}), case,
                  environment)
    new = _bundle(tmp_path, "h200-kernelbench-level1-eager-torch-compile-20261208-v4",
                  _result(environment, {"eager": _v4_timing(2_600_000), "torch-compile": _v4_timing(2_450_000)}),
                  case, environment)
    (tmp_path / "supersessions.jsonl").write_text("")
    return old, new


def test_a_v4_problem_module_bundle_supersedes_the_v3_no_grad_runs_when_shipped(
        case: ProblemCase, environment: ExecutionEnvironment, tmp_path: Path) -> None:  # noqa: F811
    from kernelindex.campaigns import supersede
    from kernelindex.campaigns.ledger import STREAM_VERSION

    old, new = _shipped(case, environment, tmp_path)
    assert supersede.harness_version(new) == STREAM_VERSION  # what `ki runner campaign ship` supersedes with
    found = [json.loads(line) for line in supersede.lines(
        [new], "2026-12-08T00:00:00Z", stream=True, verified=tmp_path / "verified",
        supersessions=tmp_path / "supersessions.jsonl")]
    old_runs, new_runs = supersede._runs(old), supersede._runs(new)
    assert sorted((o["old"], o["new"]) for o in found) == sorted((old_runs[k][0], new_runs[k][0]) for k in old_runs)
    assert len(found) == 2 and all(o["reason"] == supersede.STREAM_PROBLEM_REASON for o in found)
    assert "kernel busy time" in found[0]["reason"] and "parameters not rotated" in found[0]["reason"]


def test_the_plan_counts_v3_problem_module_runs_as_older_until_v4_supersedes_them(
        case: ProblemCase, environment: ExecutionEnvironment, tmp_path: Path) -> None:  # noqa: F811
    from kernelindex.campaigns import selection, supersede

    old, new = _shipped(case, environment, tmp_path)
    verified, supersessions = tmp_path / "verified", tmp_path / "supersessions.jsonl"
    gpu = environment.spec.hardware.product
    shipped = selection.read_shipped(verified, supersessions)
    assert {r.protocol_name for r in shipped.current()} == {V3_PROTOCOL, V4_PROTOCOL}
    assert selection.plan(shipped, gpu, "older", protocol="4").kernelbench == {"1": 2}  # the v3 runs only
    assert selection.plan(shipped, gpu, "older", protocol="3").kernelbench == {}
    supersessions.write_text("".join(line + "\n" for line in supersede.lines(
        [new], "2026-12-08T00:00:00Z", stream=True, verified=verified, supersessions=supersessions)))
    assert selection.plan(selection.read_shipped(verified, supersessions), gpu, "older").kernelbench == {}
    assert selection.plan(selection.read_shipped(verified, supersessions), "NVIDIA H100 80GB HBM3", "missing",
                          ).kernelbench == {"1": 2}  # the v4 runs, missing on the H100


def test_the_shipped_v3_no_grad_protocol_is_still_built_byte_for_byte() -> None:
    """Results made before v4 are bundled under v3's protocol: its spec (so its digest) must not move, or re-bundled
    v3 runs would land in a protocol, and cohort, of their own."""
    from kernelindex.domain.manifests import parse_manifest
    from kernelindex.runner.problem_records import protocol_manifest

    root = Path(__file__).resolve().parents[2] / "src" / "kernelindex" / "data" / "verified"
    lines = [line for f in root.glob("*kernelbench*/manifests.jsonl") for line in f.read_text().splitlines()]
    shipped = {digest_of(p): p for line in lines if '"BenchmarkProtocol"' in line and V3_PROTOCOL in line
               for p in [parse_manifest(json.loads(line))]}
    assert shipped
    for digest, protocol in shipped.items():
        spec = protocol.spec
        policy = {"warmup_calls": spec.warmup.count, "warmup_time_ns": spec.warmup.time_ns, "target_rse": 0.005,
                  "min_samples": spec.repetitions.count, "time_budget_ns": spec.repetitions.time_ns,
                  "max_samples": 2000}
        assert digest_of(protocol_manifest(policy)) == digest
        assert digest_of(protocol_manifest(policy, stream=True)) != digest
