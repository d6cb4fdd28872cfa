"""Runner protocol v4 on the CPU (issue 42 item 7): the rotation rule, the replay arithmetic, the outputs that
rotate with the inputs, the ceiling of a read/write mix and its flag, and a whole verification on a fake stream
device — the run's figure is its stream time, kernel busy time beside it, a call that cannot be captured timed
eagerly and labelled so, and the protocol named for itself."""

from __future__ import annotations

import gc
import math
import weakref

import pytest

torch = pytest.importorskip("torch")

from runner_fakes import FakeTraceDevice  # noqa: E402
from test_verify_bundle import ROPE, _adapter, _environment  # noqa: E402

from kernelindex.policy.ceilings import CeilingFigure, ceiling_check, kernel_at_size, mix_ceiling  # noqa: E402
from kernelindex.runner.campaign import verify_operation  # noqa: E402
from kernelindex.runner.rotation import (  # noqa: E402
    MAX_ROTATION_SETS,
    MIN_CALLS_PER_REPLAY,
    Rotation,
    per_call_ns,
    rotation,
    run_rotated,
)
from kernelindex.runner.timing import TimingPolicy  # noqa: E402

L2 = 50 * 2**20
POLICY = TimingPolicy(warmup_calls=2, warmup_time_ns=10_000, min_samples=20, target_rse=0.01,
                      time_budget_ns=100_000_000, host_calls=5)


# --- the rotation rule ---------------------------------------------------------------------------------------

def test_a_small_call_rotates_over_enough_sets_to_hold_four_l2s() -> None:
    rot = rotation(footprint_bytes=2 * 2**20, l2_bytes=L2)
    assert rot.sets == 100  # 4 x 50 MiB / 2 MiB
    assert rot.rotated_bytes >= 4 * L2 and rot.cold
    assert rot.calls_per_replay == 100  # a multiple of the sets, at least 32


def test_calls_per_replay_is_a_multiple_of_the_sets_and_at_least_32() -> None:
    for footprint in (3 * 2**20, 20 * 2**20, 70 * 2**20, 150 * 2**20):
        rot = rotation(footprint, L2)
        assert rot.calls_per_replay >= MIN_CALLS_PER_REPLAY
        assert rot.calls_per_replay % rot.sets == 0
        assert rot.calls_per_replay - rot.sets < MIN_CALLS_PER_REPLAY  # the smallest such multiple
    assert rotation(70 * 2**20, L2).sets == 3 and rotation(70 * 2**20, L2).calls_per_replay == 33


def test_a_call_larger_than_four_l2s_has_one_set() -> None:
    rot = rotation(footprint_bytes=4 * L2, l2_bytes=L2)
    assert (rot.sets, rot.calls_per_replay) == (1, 32) and rot.cold
    assert rotation(2**30, L2).sets == 1


def test_memory_and_the_set_cap_bound_the_rotation() -> None:
    assert rotation(2 * 2**20, L2, free_bytes=40 * 2**20).sets == 10  # half of the free memory
    assert rotation(1, L2).sets == MAX_ROTATION_SETS
    assert not rotation(1, L2).cold  # said, not hidden: the run records its sets and footprint


def test_per_call_time_is_the_replay_over_its_calls() -> None:
    assert per_call_ns(3_200_000.0, 32) == 100_000.0
    with pytest.raises(ValueError, match="at least one call"):
        per_call_ns(1.0, 0)


def test_each_call_uses_the_next_set_and_outputs_rotate_with_the_inputs() -> None:
    class Out:
        pass

    used: list[int] = []
    alive: list[weakref.ref[Out]] = []
    most_alive = [0]

    def call_of(index: int):
        def call() -> Out:
            used.append(index)
            gc.collect()
            most_alive[0] = max(most_alive[0], sum(1 for r in alive if r() is not None))
            out = Out()
            alive.append(weakref.ref(out))
            return out
        return call

    rot = Rotation(sets=3, calls_per_replay=9, footprint_bytes=1, l2_bytes=1)
    run_rotated([call_of(i) for i in range(3)], rot)
    assert used == [0, 1, 2, 0, 1, 2, 0, 1, 2]
    assert most_alive[0] == 3  # the last R outputs are held while the next call runs: its output takes new memory


# --- the ceiling of a read/write mix, and the flag -----------------------------------------------------------

TABLE = [CeilingFigure(k, size, bw) for size in (2**20, 2**30) for k, bw in
         (("read", 4.0e12 if size == 2**30 else 2.0e12), ("copy", 3.0e12 if size == 2**30 else 1.5e12),
          ("write", 3.5e12 if size == 2**30 else 1.75e12))]


def test_the_ceiling_is_each_kernels_at_the_calls_size() -> None:
    assert kernel_at_size(TABLE, "read", 2**30) == 4.0e12
    assert kernel_at_size(TABLE, "read", 2**40) == 4.0e12  # past the largest size measured: the largest's
    assert kernel_at_size(TABLE, "read", 2**10) == 2.0e12
    assert math.isclose(kernel_at_size(TABLE, "read", 2**25), 3.0e12)  # halfway in log2(size)
    assert kernel_at_size(TABLE, "fill", 2**20) is None


def test_the_mix_moves_from_read_through_copy_to_write() -> None:
    assert math.isclose(mix_ceiling(TABLE, 2**30, 0), 4.0e12)
    assert math.isclose(mix_ceiling(TABLE, 2**29, 2**29), 3.0e12)
    assert math.isclose(mix_ceiling(TABLE, 0, 2**30), 3.5e12)
    quarter = mix_ceiling(TABLE, 3 * 2**28, 2**28)  # time per byte halfway between read and copy
    assert math.isclose(1 / quarter, (1 / 4.0e12 + 1 / 3.0e12) / 2)
    assert mix_ceiling([], 1, 1) is None and mix_ceiling(TABLE, 0, 0) is None


def test_a_run_faster_than_its_mix_allows_by_more_than_3_percent_is_flagged() -> None:
    nbytes = 2**30  # a copy-like call at 1 GiB: 3.0 TB/s measured
    at_ceiling = nbytes / 3.0e12 * 1e9
    assert not ceiling_check(TABLE, nbytes // 2, nbytes // 2, at_ceiling / 1.02).exceeds
    flagged = ceiling_check(TABLE, nbytes // 2, nbytes // 2, at_ceiling / 1.05)
    assert flagged.exceeds and math.isclose(flagged.ratio, 1.05)
    assert ceiling_check(TABLE, nbytes, 0, 0.0) is None


# --- a whole verification on a fake stream device ------------------------------------------------------------

class FakeStreamSampler:
    method = "stream-time"

    def __init__(self, calls, rot: Rotation, device: FakeStreamDevice, eager: str | None) -> None:
        self.calls, self.rotation, self.device = calls, rot, device
        self.capture = "eager" if eager else "cuda_graph"
        self.capture_failure = eager
        device.sets_seen.append([c for c in calls])

    def sample(self) -> list[float]:
        start = self.device.clock.now
        run_rotated(self.calls, self.rotation)
        return [per_call_ns(self.device.clock.now - start, self.rotation.calls_per_replay)]


class FakeStreamDevice(FakeTraceDevice):
    """A v4 device: its sampler runs the K calls over the R sets on the fake clock."""

    l2_bytes = 8192

    def __init__(self, eager: str | None = None) -> None:
        super().__init__(check=("cuda_graph_replay", 50_500.0, None), wall_ns=55_000)
        self.eager, self.sets_seen = eager, []

    def free_bytes(self) -> int:
        return 1 << 30

    def stream_sampler(self, calls, rot: Rotation, no_capture: str | None = None) -> FakeStreamSampler:
        return FakeStreamSampler(calls, rot, self, self.eager)

    def kernel_busy(self, call) -> tuple[float, int, float | None]:
        return 41_000.0, 50, 43_000.0


def _verify(rope_case, device: FakeStreamDevice):
    return verify_operation(
        ROPE, [rope_case], None, device=device, environment=_environment("NVIDIA H200"),
        runner={"name": "t", "key_id": "sha256:" + "0" * 64}, policy=POLICY, calls_per_sample=10, campaign="t",
        adapters=[_adapter(device, "baseline", 50_000, role="baseline")], regions={})


def test_a_v4_run_ranks_its_stream_time_and_records_kernel_busy_time_beside_it(rope_case) -> None:
    device = FakeStreamDevice()
    result = _verify(rope_case, device)
    run = next(r for r in result.runs() if " · forward · " in r.metadata.title)
    timing = run.spec.timing
    assert timing.method == "stream-time" and timing.median_ns == 50_000
    stream = timing.stream
    assert stream.capture == "cuda_graph" and stream.l2_bytes == 8192
    assert stream.rotation_sets == math.ceil(4 * 8192 / stream.footprint_bytes)
    assert stream.calls_per_replay % stream.rotation_sets == 0 and stream.calls_per_replay >= 32
    assert (timing.kernel_busy.median_ns, timing.kernel_busy.samples, timing.kernel_busy.span_median_ns) == \
        (41_000, 50, 43_000)
    assert timing.cross_check.median_ns == 50_500 and timing.host.bound is False
    calls = device.sets_seen[0]
    assert len(calls) == stream.rotation_sets and len({id(c) for c in calls}) == len(calls)
    protocols = {m.metadata.name: m for m in result.manifests if m.kind == "BenchmarkProtocol"}
    assert "kernelindex-runner-v4-forward" in protocols  # named for the protocol, not for rope
    assert protocols["kernelindex-runner-v4-forward"].spec.harness.version == "4"
    assert "stream time" in protocols["kernelindex-runner-v4-forward"].spec.timer


def test_each_set_has_inputs_of_its_own(rope_case) -> None:
    seen: list[int] = []
    device = FakeStreamDevice()

    def spy(adapter, x):
        seen.append(x["q"].data_ptr())
        return lambda: {"q_out": x["q"] * 1.0, "k_out": x["k"] * 1.0}
    adapter = _adapter(device, "baseline", 50_000, role="baseline")
    original = adapter.binder
    adapter.binder = lambda a, x: (spy(a, x), original(a, x))[1]
    verify_operation(ROPE, [rope_case], None, device=device, environment=_environment("NVIDIA H200"),
                     runner={"name": "t", "key_id": "sha256:" + "0" * 64}, policy=POLICY, calls_per_sample=10,
                     campaign="t", adapters=[adapter], regions={})
    sets = len(device.sets_seen[0])
    assert sets > 1 and len(set(seen[-sets:])) == sets  # the timed binds: one fresh input set each


def test_a_call_that_cannot_be_captured_is_timed_eagerly_and_says_why(rope_case) -> None:
    device = FakeStreamDevice(eager="graph capture failed: operation not permitted when stream is capturing")
    run = next(r for r in _verify(rope_case, device).runs() if " · forward · " in r.metadata.title)
    stream = run.spec.timing.stream
    assert stream.capture == "eager" and "not permitted" in stream.capture_failure
    assert run.spec.timing.method == "stream-time"  # the same figure, labelled where it was taken eagerly


# --- a v4 re-measurement supersedes an older protocol's run of the same case and GPU -------------------------

def _bundle(rope_case, device, name: str, folder, product: str = "NVIDIA H200"):
    from kernelindex.runner.campaign import write_result_bundle
    from kernelindex.trust import keys

    key = folder.parent / "key" / keys.PRIVATE_KEY_FILE
    if not key.exists():
        key, _, _ = keys.generate("kernelindex-h200-runner-99", folder.parent / "key")
    runner = keys.load_public_key(key.with_name(keys.PUBLIC_KEY_FILE))
    result = verify_operation(
        ROPE, [rope_case], None, device=device, environment=_environment(product),
        runner={"name": runner.name, "key_id": runner.key_id}, policy=POLICY,
        calls_per_sample=10, campaign="t", adapters=[_adapter(device, "baseline", 50_000, role="baseline")],
        regions={})
    write_result_bundle(result, folder / name, key, "kernelindex-h200-runner-99")
    return folder / name


def test_a_v4_bundle_supersedes_the_v3_runs_of_the_same_case_and_gpu_only(rope_case, tmp_path) -> None:
    import json

    from kernelindex.campaigns import supersede as script

    verified = tmp_path / "verified"
    old = _bundle(rope_case, FakeTraceDevice(check=("cuda_graph_replay", 50_500.0, None), wall_ns=55_000), "v3",
                  verified)
    elsewhere = _bundle(rope_case, FakeTraceDevice(check=("cuda_graph_replay", 50_500.0, None), wall_ns=55_000),
                        "v3-h100", verified, product="NVIDIA H100 80GB HBM3")
    new = _bundle(rope_case, FakeStreamDevice(), "v4", verified)
    (tmp_path / "supersessions.jsonl").write_text("")
    out = [json.loads(line) for line in script.lines([new], "2026-12-07T06:00:00Z", stream=True, verified=verified,
                                                      supersessions=tmp_path / "supersessions.jsonl")]
    old_runs, new_runs = script._runs(old), script._runs(new)
    assert sorted((o["old"], o["new"]) for o in out) == sorted(
        (old_runs[k][0], new_runs[k][0]) for k in old_runs)  # every region of the case, each by its v4 run
    assert not {o["old"] for o in out} & {d for d, _ in script._runs(elsewhere).values()}  # not the H100's
    assert all("protocol v4" in o["reason"] for o in out)
