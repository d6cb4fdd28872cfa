"""The statistics and the timing protocol, driven by a fake device clock (no GPU, no torch)."""

from __future__ import annotations

import itertools
import random
import statistics

import pytest
from runner_fakes import FakeDevice

from kernelindex.runner.stats import mad, median_ci95, quantile, relative_standard_error, summarize
from kernelindex.runner.timing import TimingPolicy, measure_interleaved


def test_quantile_interpolates_like_numpy() -> None:
    values = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert quantile(values, 0.5) == 3.0
    assert quantile(values, 0.2) == pytest.approx(1.8)
    assert quantile(values, 0.8) == pytest.approx(4.2)
    with pytest.raises(ValueError):
        quantile([], 0.5)


def test_median_ci_uses_order_statistics() -> None:
    values = [float(i) for i in range(1, 101)]
    low, high = median_ci95(values)
    assert (low, high) == (40.0, 61.0)  # ranks 40 and 61 of 100: the textbook distribution-free interval
    assert low <= statistics.median(values) <= high


def test_mad_and_rse() -> None:
    assert mad([1.0, 1.0, 2.0, 2.0, 4.0, 6.0, 9.0]) == 1.0
    assert relative_standard_error([5.0]) == float("inf")
    assert relative_standard_error([10.0] * 50) == 0.0


def _work(device: FakeDevice, ns: float, noise: float, rng: random.Random, log: list[str], name: str):
    def call() -> None:
        log.append(name)
        device.clock.advance(ns * (1 + rng.uniform(-noise, noise)))

    return call


def test_interleaved_protocol_recovers_device_times() -> None:
    device, rng, log = FakeDevice(calls_per_sample=10), random.Random(1), []
    calls = {"fast": _work(device, 10_000, 0.02, rng, log, "fast"),
             "slow": _work(device, 40_000, 0.02, rng, log, "slow")}
    samplers = {name: device.sampler(call) for name, call in calls.items()}
    policy = TimingPolicy(warmup_calls=3, warmup_time_ns=100_000, min_samples=100, target_rse=0.001)
    results = measure_interleaved(calls, samplers, device, policy)
    for name, expected in (("fast", 10_000), ("slow", 40_000)):
        summary = summarize(results[name].samples)
        assert summary.samples >= 100
        assert summary.median == pytest.approx(expected, rel=0.01)
        assert summary.ci95_low <= summary.median <= summary.ci95_high
        assert results[name].host_samples == [device.host_ns] * policy.host_calls
        assert results[name].warmup_calls >= 4
        assert results[name].stop_reason


def test_implementations_are_interleaved_not_blocked() -> None:
    device, rng, log = FakeDevice(calls_per_sample=5), random.Random(2), []
    calls = {n: _work(device, 1_000, 0.0, rng, log, n) for n in ("a", "b", "c")}
    samplers = {name: device.sampler(call) for name, call in calls.items()}
    policy = TimingPolicy(warmup_calls=0, warmup_time_ns=0, min_samples=20, target_rse=1.0)
    device.sample_log.clear()
    measure_interleaved(calls, samplers, device, policy)
    order = [next(n for n, s in samplers.items() if s.call is call) for call in device.sample_log]
    timed = order[3:]  # after one warm-up batch each
    assert timed[:3] == ["a", "b", "c"] and timed[3:6] == ["b", "c", "a"]  # the order rotates every round
    assert max(len(list(g)) for _, g in itertools.groupby(timed)) == 1


def test_noisy_implementation_stops_at_time_budget() -> None:
    device, rng, log = FakeDevice(calls_per_sample=10), random.Random(3), []
    call = _work(device, 1_000_000, 0.9, rng, log, "noisy")
    policy = TimingPolicy(warmup_calls=0, warmup_time_ns=0, min_samples=100, max_samples=100_000,
                          target_rse=1e-6, time_budget_ns=500_000_000)
    result = measure_interleaved({"noisy": call}, {"noisy": device.sampler(call)}, device, policy)["noisy"]
    assert result.stop_reason == "time budget"
    assert len(result.samples) >= 100


def test_min_samples_even_when_quiet() -> None:
    device, rng, log = FakeDevice(calls_per_sample=7), random.Random(4), []
    call = _work(device, 5_000, 0.0, rng, log, "quiet")
    policy = TimingPolicy(warmup_calls=0, warmup_time_ns=0, min_samples=100, target_rse=0.5)
    result = measure_interleaved({"q": call}, {"q": device.sampler(call)}, device, policy)["q"]
    assert len(result.samples) == 105  # 15 batches of 7: the first batch count reaching 100
    assert result.stop_reason.startswith("relative standard error")


def test_a_run_reaching_the_minimum_at_the_hard_limit_stops_by_its_statistics() -> None:
    """The round that brings a long call to min_samples can also pass the hard limit: the run is not short of
    the minimum, so its stop reason is the statistic's (the H200's batch-127 paged decode said "hard time limit
    … before min_samples" with 100 samples)."""
    device, rng, log = FakeDevice(calls_per_sample=10), random.Random(5), []
    call = _work(device, 40_000_000, 0.0, rng, log, "long")  # 10 batches of 0.4 s reach 100 at 4 s
    policy = TimingPolicy(warmup_calls=0, warmup_time_ns=0, min_samples=100, target_rse=0.01,
                          time_budget_ns=500_000_000, hard_limit_ns=4_000_000_000)
    result = measure_interleaved({"long": call}, {"long": device.sampler(call)}, device, policy)["long"]
    assert len(result.samples) == 100
    assert result.stop_reason.startswith("relative standard error")
    short = TimingPolicy(warmup_calls=0, warmup_time_ns=0, min_samples=100, target_rse=0.01,
                         time_budget_ns=500_000_000, hard_limit_ns=2_000_000_000)
    result = measure_interleaved({"long": call}, {"long": device.sampler(call)}, device, short)["long"]
    assert len(result.samples) == 50 and "before min_samples" in result.stop_reason
