"""Runner protocol v3 on a fake device with fake CUPTI traces: device time, span and syncs from the
trace (the flush never in it), the host-bound label, under-sampled runs, and the self-check's flag."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from runner_fakes import FakeTraceDevice  # noqa: E402
from test_verify_bundle import ROPE, _adapter, _environment  # noqa: E402

from kernelindex.runner.campaign import verify_operation  # noqa: E402
from kernelindex.runner.timing import TimingPolicy  # noqa: E402
from kernelindex.runner.trace import CALL_PREFIX, TraceEvent, calls_from_trace, union_ns  # noqa: E402

POLICY = TimingPolicy(warmup_calls=2, warmup_time_ns=10_000, min_samples=100, target_rse=0.01,
                      time_budget_ns=100_000_000, host_calls=5)


def _trace() -> list[TraceEvent]:
    """One timed call: a flush kernel launched before its range (running into it), two kernels on two
    streams overlapping by 2 µs, a memset, a device-to-host copy and the stream sync that waits for it;
    the profiler's GPU-side copy of the range and its 'Stream Sync' marker are no work of the call."""
    return [
        TraceEvent("cudaLaunchKernel", False, 50, 60, 1),
        TraceEvent("reduce_kernel (flush)", True, 100, 1_100, 1),
        TraceEvent(f"{CALL_PREFIX}0", False, 1_000, 30_000, 90, annotation=True),
        TraceEvent(f"{CALL_PREFIX}0", True, 1_050, 29_000, 90, annotation=True),
        TraceEvent("cudaLaunchKernel", False, 1_100, 1_200, 2),
        TraceEvent("cudaLaunchKernel", False, 1_300, 1_400, 3),
        TraceEvent("cudaMemsetAsync", False, 1_500, 1_600, 4),
        TraceEvent("cudaMemcpyAsync", False, 1_700, 1_800, 5),
        TraceEvent("cudaStreamSynchronize", False, 1_800, 25_000, 6),
        TraceEvent("kernel_a", True, 2_000, 7_000, 2),
        TraceEvent("kernel_b", True, 5_000, 9_000, 3),  # overlaps kernel_a by 2 µs: counted once
        TraceEvent("Memset (Device)", True, 9_500, 10_000, 4),
        TraceEvent("Memcpy DtoH (Device -> Pinned)", True, 20_000, 21_000, 5),
        TraceEvent("Stream Sync", True, 21_000, 25_000, 6),
        TraceEvent("cudaLaunchKernel", False, 40_000, 40_100, 7),  # after the range: the next flush
        TraceEvent("reduce_kernel (flush)", True, 40_200, 41_200, 7),
    ]


def test_device_time_is_the_union_of_the_calls_kernels_memsets_and_copies() -> None:
    (call,) = calls_from_trace(_trace(), 1)
    assert call.device_ns == 7_000 + 500 + 1_000  # kernels a∪b, the memset, the copy; no flush, no marker
    assert call.span_ns == 21_000 - 2_000
    assert call.syncs == 1 and call.device_to_host_copies == 1
    assert union_ns([(0, 10), (5, 15), (20, 30), (30, 31)]) == 26


@pytest.fixture
def run_of(rope_case):
    def run(device: FakeTraceDevice, device_ns: float, policy: TimingPolicy = POLICY):
        result = verify_operation(
            ROPE, [rope_case], None, device=device, environment=_environment("NVIDIA H200"),
            runner={"name": "t", "key_id": "sha256:" + "0" * 64}, policy=policy, calls_per_sample=10,
            campaign="t", adapters=[_adapter(device, "baseline", device_ns, role="baseline")],
        )
        return {r.metadata.title.split(" · ")[2]: r for r in result.runs()}["forward"]
    return run


def test_a_host_bound_call_records_its_wall_time_syncs_and_device_time(run_of) -> None:
    device = FakeTraceDevice(check=("per_call_events", 425_800.0, "graph capture failed: sync"), wall_ns=430_000,
                             syncs=True)
    timing = run_of(device, 5_000).spec.timing
    assert timing.method == "cupti-device-time" and timing.median_ns == 5_000
    assert timing.span_median_ns == 5_000 + 900
    assert timing.host is not None and timing.host.bound and timing.host.wall_ns == 430_000
    assert timing.host.syncs_per_call == 1 and timing.host.device_to_host_copies_per_call == 1
    assert timing.cross_check is not None and timing.cross_check.method == "per_call_events"
    assert timing.cross_check.agrees is None  # not capturable: no agreement required
    assert timing.min_samples == 100 and timing.under_sampled is None and timing.samples >= 100


def test_a_device_bound_call_is_not_host_bound(run_of) -> None:
    timing = run_of(FakeTraceDevice(check=("cuda_graph_replay", 50_500.0, None), wall_ns=55_000), 50_000).spec.timing
    assert timing.host is not None and not timing.host.bound and timing.host.syncs_per_call == 0
    assert timing.cross_check is not None and timing.cross_check.agrees is True


def test_the_self_check_flags_a_disagreement_and_leaves_short_calls_alone(run_of) -> None:
    flagged = run_of(FakeTraceDevice(check=("cuda_graph_replay", 56_000.0, None), wall_ns=60_000), 50_000)
    assert flagged.spec.timing.cross_check.agrees is False
    assert "graph/device 1.120" in flagged.spec.timing.cross_check.detail
    short = run_of(FakeTraceDevice(check=("cuda_graph_replay", 8_000.0, None), wall_ns=9_000), 5_000)
    assert short.spec.timing.cross_check.agrees is None  # under 20 µs: the replay's own overhead shows


def test_a_run_stopped_before_the_minimum_is_marked_under_sampled(run_of) -> None:
    tight = TimingPolicy(warmup_calls=2, warmup_time_ns=10_000, min_samples=100, target_rse=0.01,
                         time_budget_ns=200_000, host_calls=5)  # hard limit 600 µs: 12 calls of 50 µs
    timing = run_of(FakeTraceDevice(check=("cuda_graph_replay", 50_000.0, None), wall_ns=55_000), 50_000,
                    tight).spec.timing
    assert timing.samples < 100
    assert timing.under_sampled.startswith(f"{timing.samples} samples, fewer than the protocol's minimum of 100")
    assert "hard time limit" in timing.under_sampled


def test_a_high_hard_limit_takes_the_minimum_samples_past_the_budget(run_of) -> None:
    patient = TimingPolicy(warmup_calls=2, warmup_time_ns=10_000, min_samples=100, target_rse=0.01,
                           time_budget_ns=200_000, host_calls=5, hard_limit_ns=40_000_000_000)
    timing = run_of(FakeTraceDevice(check=("cuda_graph_replay", 50_000.0, None), wall_ns=55_000), 50_000,
                    patient).spec.timing
    assert timing.samples >= 100 and timing.under_sampled is None


class _MemoryLoggingDevice(FakeTraceDevice):
    """Logs when the cached memory is handed back and when each cross-check runs."""

    def __init__(self) -> None:
        super().__init__(check=("cuda_graph_replay", 50_500.0, None), wall_ns=55_000)
        self.log: list[str] = []

    def release(self) -> None:
        self.log.append("release")

    def cross_check(self, call):  # type: ignore[no-untyped-def]
        self.log.append("cross_check")
        return super().cross_check(call)


def test_each_cross_check_starts_from_released_memory(rope_case) -> None:
    """A graph capture allocates its calls' temporaries anew: the cache is emptied before each
    implementation's cross-check, not only at the end of the case (paged decode at batch 127 ran out of
    memory in the third implementation's cross-check with 35 GiB cached but free)."""
    device = _MemoryLoggingDevice()
    verify_operation(
        ROPE, [rope_case], None, device=device, environment=_environment("NVIDIA H200"),
        runner={"name": "t", "key_id": "sha256:" + "0" * 64}, policy=POLICY, calls_per_sample=10, campaign="t",
        adapters=[_adapter(device, "baseline", 50_000, role="baseline"), _adapter(device, "other", 40_000)],
    )
    checks = [i for i, entry in enumerate(device.log) if entry == "cross_check"]
    assert len(checks) >= 2
    assert all(device.log[i - 1] == "release" for i in checks)
