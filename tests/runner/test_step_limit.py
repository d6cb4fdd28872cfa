"""A step's time limit (SIGTERM from ``timeout``) keeps the cases already measured: the case in progress is
dropped, the finished ones are the result, and the campaign's record lets the next call measure only the rest
(runner/step_limit.py, campaigns/measure.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from op_cases import ROPE_ORDER, small_workload  # noqa: E402
from runner_fakes import FakeDevice  # noqa: E402
from test_verify_bundle import POLICY, ROPE, _adapter, _environment  # noqa: E402

from kernelindex.domain.manifests import digest_of  # noqa: E402
from kernelindex.runner.campaign import verify_operation  # noqa: E402
from kernelindex.runner.step_limit import CampaignCut, StepLimit  # noqa: E402
from kernelindex.runner.verify import case_label  # noqa: E402


def _cases(n: int) -> list[Any]:
    return [small_workload("rope", {"seq": 8 * (i + 1), "hidden": 64, "q_heads": 4, "kv_heads": 2}, "fp32",
                           ROPE_ORDER) for i in range(n)]


@pytest.fixture
def limit():
    previous = signal.getsignal(signal.SIGTERM)
    yield StepLimit().install()
    signal.signal(signal.SIGTERM, previous)


def _verify(cases: list[Any], limit: StepLimit, on_event, runner: dict[str, str] | None = None) -> Any:
    device = FakeDevice(name="NVIDIA H200")
    return verify_operation(
        ROPE, cases, None, device=device, environment=_environment("NVIDIA H200"),
        runner=runner or {"name": "t", "key_id": "sha256:" + "0" * 64}, policy=POLICY, calls_per_sample=10,
        campaign="t",
        adapters=[_adapter(device, "baseline", 50_000, role="baseline")], on_event=on_event, limit=limit,
    )


def _signal_on(kind: str, index: int):
    def on_event(event: str, data: dict[str, Any]) -> None:
        if event == kind and data.get("index", index) == index:
            os.kill(os.getpid(), signal.SIGTERM)
    return on_event


def test_a_signal_between_cases_stops_before_the_next_one(limit: StepLimit) -> None:
    cases = _cases(3)
    result = _verify(cases, limit, _signal_on("case_done", 0))
    assert result.cut and [case_label(c.workload) for c in result.cases] == [case_label(cases[0])]
    assert {r.spec.workload for r in result.runs()} == {digest_of(cases[0])} and len(result.runs()) == 3


def test_a_signal_inside_a_case_drops_that_case_only(limit: StepLimit) -> None:
    cases = _cases(3)
    seen: list[int] = []

    def on_event(event: str, data: dict[str, Any]) -> None:
        if event == "case":
            seen.append(data["index"])
        if event == "step" and seen == [0, 1]:  # inside case 1, while it is being measured
            os.kill(os.getpid(), signal.SIGTERM)

    result = _verify(cases, limit, on_event)
    assert result.cut and len(result.cases) == 1 and len(result.runs()) == 3
    assert all(r.spec.status == "passed" for r in result.runs())


def test_without_a_signal_every_case_is_measured(limit: StepLimit) -> None:
    result = _verify(_cases(2), limit, None)
    assert not result.cut and len(result.cases) == 2 and not limit.reached


def test_the_cut_is_not_an_exception_an_implementation_can_swallow() -> None:
    assert not issubclass(CampaignCut, Exception)


def _bench_campaign() -> Any:
    from kernelindex.campaigns import measure

    return measure


class _Result:
    def __init__(self, cut: bool, cases: list[Any]) -> None:
        self.cut = cut
        self.cases = [type("Case", (), {"workload": w})() for w in cases]


def test_the_record_resumes_where_the_cut_stopped(tmp_path: Path) -> None:
    campaign = _bench_campaign()
    cases = _cases(4)
    record = campaign.note_cut({}, "rope", _Result(True, cases[:1]), wrote_bundle=True)
    assert record == {"rope": {"finished": [case_label(cases[0])], "parts": 1}}
    assert campaign.resumed_suffix(record, "rope") == "-r1"  # the next part's bundle sits beside the first
    # cut again inside its first case: nothing new finished, no bundle written, the part count stays
    record = campaign.note_cut(record, "rope", _Result(True, []), wrote_bundle=False)
    assert record["rope"]["parts"] == 1
    record = campaign.note_cut(record, "rope", _Result(True, cases[1:3]), wrote_bundle=True)
    assert record["rope"] == {"finished": sorted(case_label(c) for c in cases[:3]), "parts": 2}
    campaign.write_cut_record(tmp_path, "rope", record)
    assert campaign.cut_record(tmp_path, "rope") == record
    # the operation finishes: it leaves the record, and an empty record leaves no file
    campaign.write_cut_record(tmp_path, "rope", campaign.note_cut(record, "rope", _Result(False, cases[3:]),
                                                                    wrote_bundle=True))
    assert campaign.cut_record(tmp_path, "rope") == {} and not (tmp_path / "cut-rope.json").exists()


# --- A region is the unit a cut keeps (fused-moe under runner v3, its ledger, 2026-12-02) ---------------


def _signal_at_region(case_index: int, region: str):
    """SIGTERM as ``region`` of case ``case_index`` starts timing (its check and earlier regions are done)."""
    seen: list[int] = []

    def on_event(event: str, data: dict[str, Any]) -> None:
        if event == "case":
            seen.append(data["index"])
        if event == "step" and seen and seen[-1] == case_index and data["label"].startswith(f"{region}: timing"):
            os.kill(os.getpid(), signal.SIGTERM)
    return on_event


def test_a_cut_keeps_the_regions_its_case_finished_and_writes_a_bundle_of_them(limit: StepLimit,
                                                                              tmp_path: Path) -> None:
    from kernelindex.runner.campaign import write_result_bundle
    from kernelindex.trust import keys
    from kernelindex.trust.bundles import verify_directory

    private, _, key = keys.generate("t", tmp_path / "keys")
    cases = _cases(3)
    result = _verify(cases, limit, _signal_at_region(1, "forward+backward"), {"name": key.name, "key_id": key.key_id})
    assert result.cut and [case_label(c.workload) for c in result.cases] == [case_label(cases[0])]
    assert result.partial is not None and result.partial.workload is cases[1]
    assert [o.region for o in result.partial.impls] == ["forward", "backward"]
    assert result.finished_regions() == {case_label(cases[0]): ["forward", "backward", "forward+backward"],
                                         case_label(cases[1]): ["forward", "backward"]}
    # The third case and case 1's forward+backward were never reached: the bundle leaves their workload and
    # protocol out (a bundle carries only what its runs reference; before 2026-12-02 such a write was refused).
    bundle = write_result_bundle(result, tmp_path / "b", private, "t")
    read = verify_directory(tmp_path / "b")
    runs = [m for m in read.manifests if m.kind == "BenchmarkRun"]
    assert len(runs) == 5 and bundle.digest == read.digest
    assert {r.spec.workload for r in runs} == {digest_of(cases[0]), digest_of(cases[1])}
    assert not any(m.kind == "WorkloadCase" and digest_of(m) == digest_of(cases[2]) for m in read.manifests)


def test_every_finished_region_is_checkpointed_and_the_bundle_replaced_whole(tmp_path: Path) -> None:
    from kernelindex.runner.campaign import replace_result_bundle
    from kernelindex.trust import keys
    from kernelindex.trust.bundles import verify_directory

    private, _, key = keys.generate("t", tmp_path / "keys")
    out = tmp_path / "bundles" / "h200-rope"
    (out.parent / ".h200-rope.new").mkdir(parents=True)  # a rewrite a killed step left half done
    (out.parent / ".h200-rope.new" / "junk").write_text("x")
    seen: list[int] = []

    def checkpoint(partial: Any) -> None:
        replace_result_bundle(partial, out, private, "t")
        seen.append(len([m for m in verify_directory(out).manifests if m.kind == "BenchmarkRun"]))

    device = FakeDevice(name="NVIDIA H200")
    result = verify_operation(
        ROPE, _cases(2), None, device=device, environment=_environment("NVIDIA H200"),
        runner={"name": key.name, "key_id": key.key_id}, policy=POLICY, calls_per_sample=10, campaign="t",
        adapters=[_adapter(device, "baseline", 50_000, role="baseline")], checkpoint=checkpoint,
    )
    assert seen == [1, 2, 3, 4, 5, 6] and len(result.runs()) == 6  # one run per region, every region on disk
    assert sorted(p.name for p in out.parent.iterdir()) == ["h200-rope"]  # leftovers cleared, no .old left


def test_the_fused_moe_path_keeps_its_finished_regions(limit: StepLimit, tmp_path: Path) -> None:
    """The per-expert loop (a host sync per expert, index inputs) on the CPU test device, cut as backward starts."""
    from op_cases import case

    from kernelindex import registry
    from kernelindex.runner.campaign import available_adapters, operation_def, write_result_bundle
    from kernelindex.runner.cpu_device import CpuTestDevice
    from kernelindex.runner.timing import TimingPolicy
    from kernelindex.trust import keys
    from kernelindex.trust.bundles import verify_directory

    moe = registry.load_operation("fused-moe")
    work = case("fused-moe", {"experts": 4, "hidden": 8, "intermediate": 4, "tokens": 8, "top_k": 2}, "bf16")
    adapters, _ = available_adapters(operation_def("fused-moe"), ["baseline"])
    policy = TimingPolicy(warmup_calls=1, warmup_time_ns=1, min_samples=10, time_budget_ns=10**9, host_calls=2)
    private, _, key = keys.generate("t", tmp_path / "keys")
    result = verify_operation(
        moe, [work], None, device=CpuTestDevice("NVIDIA H200", 5), environment=_environment("NVIDIA H200"),
        runner={"name": key.name, "key_id": key.key_id}, policy=policy, calls_per_sample=5, campaign="t",
        adapters=adapters, on_event=_signal_at_region(0, "backward"), limit=limit,
    )
    assert result.cut and not result.cases and result.partial is not None
    assert [(o.region, o.status) for o in result.partial.impls] == [("forward", "passed")]
    write_result_bundle(result, tmp_path / "b", private, "t")
    (run,) = [m for m in verify_directory(tmp_path / "b").manifests if m.kind == "BenchmarkRun"]
    assert run.spec.timing.samples >= 10 and "distinct_top_k_index" in run.spec.timing.raw


def test_the_record_resumes_the_regions_a_cut_case_left(tmp_path: Path) -> None:
    campaign = _bench_campaign()
    cases = _cases(3)
    folder = tmp_path / "cases"
    folder.mkdir()
    (folder / "cases.jsonl").write_text("\n".join(c.model_dump_json() for c in cases) + "\n")
    regions = {digest_of(c): ["backward", "forward", "forward+backward"] for c in cases}
    (folder / "regions.json").write_text(json.dumps(regions))
    partial = type("Case", (), {"workload": cases[1], "impls": [type("O", (), {"region": "forward"})()]})()
    result = _Result(True, cases[:1])
    result.partial = partial  # type: ignore[attr-defined]
    record = campaign.note_cut({}, "rope", result, wrote_bundle=True)
    assert record == {"rope": {"finished": [case_label(cases[0])], "parts": 1,
                               "regions": {case_label(cases[1]): ["forward"]}}}
    campaign.write_cut_record(tmp_path / "out", "rope", record)
    args = campaign.main.__globals__["argparse"].Namespace(
        out=tmp_path / "out", label="rope", only_cases=None, impl="", operations="rope", cases=folder, smoke=False,
        skip_cases=0, max_cases=0, order="forward", regions="", bundle_suffix="", gpu_tag="h200")
    plan, outs = campaign._plan(args)
    (_, left, _, left_regions), = plan
    assert [case_label(w) for w in left] == [case_label(c) for c in cases[1:]]
    assert left_regions[digest_of(cases[1])] == ("backward", "forward+backward")  # forward is in part 1
    assert left_regions[digest_of(cases[2])] == ("backward", "forward", "forward+backward")
    assert outs[0].name.endswith("-r1")
    # the resumed part finishes case 1: it leaves ``regions`` and joins ``finished``
    later = campaign.note_progress(record, "rope", _Result(True, cases[1:2]), wrote_bundle=True, done=False)
    assert later == {"rope": {"finished": sorted(case_label(c) for c in cases[:2]), "parts": 2}}


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the caught-signal mask of /proc")
def test_a_handler_a_native_library_replaced_is_put_back_at_the_next_case(limit: StepLimit) -> None:
    import ctypes

    from kernelindex.runner.step_limit import sigterm_caught

    assert sigterm_caught()
    ctypes.CDLL(None).signal(signal.SIGTERM, 0)  # SIG_DFL behind Python's back: a SIGTERM now kills (rc 143)
    assert not sigterm_caught() and signal.getsignal(signal.SIGTERM) == limit._on_signal
    with limit.case():
        pass
    assert sigterm_caught() and limit.replaced == 1


ROOT = Path(__file__).resolve().parents[2]
MEASURE = ROOT / "src" / "kernelindex" / "campaigns" / "measure.py"


def _softmax_step(tmp_path: Path) -> tuple[list[Any], list[str], dict[str, str], Path]:
    """A campaign step on the CPU test device: 3 softmax cases of 3 regions each, its command, env and output."""
    from kernelindex.trust import keys

    cases = [small_workload("softmax", {"rows": 8 * (i + 1), "hidden": 32}, "fp32") for i in range(3)]
    folder, out = tmp_path / "cases", tmp_path / "out"
    folder.mkdir()
    (folder / "cases.jsonl").write_text("\n".join(c.model_dump_json() for c in cases) + "\n")
    (folder / "regions.json").write_text(json.dumps({digest_of(c): ["backward", "forward", "forward+backward"]
                                                     for c in cases}))
    keys.generate("t", tmp_path / "keys")
    command = [sys.executable, str(MEASURE), "run", "--cases", str(folder), "--key",
               str(tmp_path / "keys" / "runner.key"), "--out", str(out), "--operations", "softmax",
               "--label", "softmax", "--impl", "baseline",
               "--test-device-product", "NVIDIA H200", "--min-samples", "10", "--time-budget", "0.01",
               "--hard-limit", "5", "--host-calls", "2"]
    return cases, command, {**os.environ, "PYTHONPATH": str(ROOT / "src")}, out


@pytest.mark.parametrize("sig, rc", [(signal.SIGKILL, -signal.SIGKILL), (signal.SIGTERM, 3)])
def test_a_step_killed_or_cut_keeps_every_finished_region_and_the_next_call_measures_the_rest(
        tmp_path: Path, sig: int, rc: int) -> None:
    """SIGKILL (what ``timeout -k`` sends when SIGTERM was not handled in time, or a step that dies of its SIGTERM,
    rc 137/143): the bundle and the record written after every finished region are what the step leaves. SIGTERM
    (the step limit): the same, exit 3; and the call that resumes it exits 0 (it is done), not 3 again."""
    import subprocess
    import time

    from kernelindex.trust.bundles import verify_directory

    campaign = _bench_campaign()
    cases, command, env, out = _softmax_step(tmp_path)
    record_path = out / "cut-softmax.json"
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and process.poll() is None:
            if record_path.exists():  # the first region is on disk: kill the step inside its first case
                break
            time.sleep(0.02)
        assert process.poll() is None, "the step finished before it could be killed"
        process.send_signal(sig)
    finally:
        assert process.wait() == rc
    record = campaign.cut_record(out, "softmax")["softmax"]
    (part,) = [p for p in (out / "bundles").iterdir() if not p.name.startswith(".")]
    first = [m for m in verify_directory(part).manifests if m.kind == "BenchmarkRun"]
    kept = {(r.spec.workload, r.spec.source.external_id.split("/")[-2]) for r in first}
    by_label = {case_label(c): digest_of(c) for c in cases}
    said = {(by_label[label], region) for label in record["finished"] for region in
            ("forward", "backward", "forward+backward")} | {
        (by_label[label], region) for label, regions in record.get("regions", {}).items() for region in regions}
    assert kept == said and record["parts"] == 1 and len(first) == len(kept)  # the record says what the bundle holds
    assert 0 < len(kept) < 9
    assert subprocess.run(command, env=env, capture_output=True).returncode == 0  # the next call: the rest, as -r1
    (second,) = [p for p in (out / "bundles").iterdir() if p.name.endswith("-r1")]
    rest = [m for m in verify_directory(second).manifests if m.kind == "BenchmarkRun"]
    both = [(r.spec.workload, r.spec.source.external_id.split("/")[-2]) for r in first + rest]
    assert len(both) == len(set(both)) == 9 and not record_path.exists()  # each case-region once, in two parts


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the caught-signal mask of /proc")
def test_a_handler_replaced_inside_a_region_is_back_before_the_next_region(limit: StepLimit) -> None:
    import ctypes

    from kernelindex.runner.step_limit import sigterm_caught

    def on_event(event: str, data: dict[str, Any]) -> None:
        if event == "step" and data["label"].startswith("forward: timing"):
            ctypes.CDLL(None).signal(signal.SIGTERM, 0)  # as a native library's first call might

    caught: list[bool] = []
    device = FakeDevice(name="NVIDIA H200")
    verify_operation(
        ROPE, _cases(1), None, device=device, environment=_environment("NVIDIA H200"),
        runner={"name": "t", "key_id": "sha256:" + "0" * 64}, policy=POLICY, calls_per_sample=10, campaign="t",
        adapters=[_adapter(device, "baseline", 50_000, role="baseline")], on_event=on_event, limit=limit,
        checkpoint=lambda result: caught.append(sigterm_caught()),
    )
    assert caught == [True, True, True] and limit.replaced == 1


# --- A deadline needs no signal (rc 143 twice on the H200: a library had set SIGTERM back to its default) -------

_LOSING_LIBRARY = '''"""``campaigns/measure.py run`` with a device library as the H200 saw one: every sample batch
sets SIGTERM back to its default action behind Python's back, and a batch of the second region's sampling outlasts
the step's deadline (fused-moe's longest batch: ~16 s). The batch outlasts it on the step limit's clock, which the
batch moves past the deadline (an injected clock: the region reaches its sampling when the machine lets it, and
the deadline is still ahead of it then, however loaded the machine is)."""
import ctypes, runpy, signal, sys, time
from kernelindex.runner import cpu_device, step_limit
from kernelindex.runner.step_limit import deadline_after_start

deadline = deadline_after_start(float(sys.argv[sys.argv.index("--deadline-s") + 1]))
made, sample, sampler = [], cpu_device.NominalStreamSampler.sample, cpu_device.CpuTestDevice.stream_sampler
libc = ctypes.CDLL(None)

class StepClock:
    offset = 0.0
    def __getattr__(self, name):
        return getattr(time, name)
    def monotonic(self):
        return time.monotonic() + self.offset

clock = step_limit.time = StepClock()

def losing_sampler(self, calls, rotation, no_capture=None):
    made.append(sampler(self, calls, rotation, no_capture))
    made[-1].region_index = len(made) - 1
    return made[-1]

def losing_sample(self):
    libc.signal(signal.SIGTERM, signal.SIG_DFL)
    if getattr(self, "region_index", 0) == 1 and sys._getframe(1).f_code.co_name == "measure_interleaved":
        clock.offset = max(clock.offset, deadline - time.monotonic() + 0.05)
        time.sleep(0.05)
    return sample(self)

cpu_device.CpuTestDevice.stream_sampler, cpu_device.NominalStreamSampler.sample = losing_sampler, losing_sample
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
'''


@pytest.mark.skipif(not Path("/proc/self/status").exists() or not shutil.which("timeout"),
                    reason="Linux: a native SIG_DFL, and coreutils' timeout as the campaign scripts run it")
def test_a_deadline_cuts_inside_the_sampling_when_sigterm_would_kill(tmp_path: Path) -> None:
    """The step runs as bench/h200_v6.sh runs it (``timeout --preserve-status -k``, its deadline seconds before),
    with SIGTERM at SIG_DFL during every batch: the deadline alone cuts the region being sampled at the next batch,
    and the step ends as a SIGTERM cut would (exit 3, the finished region in the bundle, the record naming it)."""
    import subprocess
    import time

    from kernelindex.trust.bundles import verify_directory

    campaign = _bench_campaign()
    cases, command, env, out = _softmax_step(tmp_path)
    (tmp_path / "losing_library.py").write_text(_LOSING_LIBRARY)
    # The backward region's sampling starts ~3 s after the process here, ~7 s on 2 loaded cores; its slow batch moves
    # the step limit's clock past the deadline. The real deadline and the timeout's SIGTERM are far beyond that, so
    # the cut is the deadline's however loaded the machine (it failed at load 5.5 when the race was in real time).
    deadline, limit = 60, 120
    started = time.monotonic()
    step = subprocess.run(["timeout", "--preserve-status", "-k", "5", str(limit), sys.executable,
                           str(tmp_path / "losing_library.py"), *command[1:], "--deadline-s", str(deadline),
                           "--min-samples", "30"],  # rounds of sampling after the slow one
                          env=env, capture_output=True, text=True)
    log = step.stdout + step.stderr
    assert step.returncode == 3, log  # without the deadline: 0, or 143 had the timeout's SIGTERM found a batch
    assert time.monotonic() - started < limit
    # at the batch after the slow one (a loaded machine may reach the deadline in the region's warm-up batches)
    assert re.search(r"cut in case 1 of 3 by the deadline at backward: (sampling round|warm-up baseline, batch)",
                     log), log
    assert "WARNING: the SIGTERM handler of the step limit was gone" in log  # found at a batch, said in the log
    first = case_label(cases[0])
    assert campaign.cut_record(out, "softmax") == {"softmax": {"finished": [], "parts": 1,
                                                               "regions": {first: ["forward"]}}}
    (bundle,) = [p for p in (out / "bundles").iterdir() if not p.name.startswith(".")]
    runs = [m for m in verify_directory(bundle).manifests if m.kind == "BenchmarkRun"]
    assert [(r.spec.workload, r.spec.source.external_id.split("/")[-2]) for r in runs] == \
        [(digest_of(cases[0]), "forward")]


def test_a_deadline_cuts_at_the_next_safe_point_and_not_outside_a_case() -> None:
    import time

    limit = StepLimit(deadline=time.monotonic() - 1)
    limit.check("between cases")  # outside a case: no cut here, the next case start raises
    assert limit.reached and limit.cut_by == "the deadline"
    with pytest.raises(CampaignCut), limit.case():
        pass
    assert StepLimit(deadline=time.monotonic() + 60).check("sampling") is None
