"""aiter's tuner as a protocol: its own statistic (a mean), never ranked with medians."""

from __future__ import annotations

from kernelindex.domain.manifests import BenchmarkProtocol, build

STATISTIC = "aiter tuner, mean of 101, profiler device time"


def tuner_protocol() -> BenchmarkProtocol:
    return build(
        "BenchmarkProtocol",
        {
            "harness": {"name": "aiter tuner"},
            "timer": "PyTorch profiler GPU trace: the kernels' device time (aiter test_common: perftest → "
                     "run_perftest → get_trace_perf)",
            "timed_region": "forward",
            "warmup": {"count": 2},
            "repetitions": {"count": 101},
            "l2_policy": "rotating copies of the inputs, so L2 is cold-ish; not flushed",
            "input_regeneration": "rotating copies of the same inputs",
            "statistic": "mean",
            "correctness": {"policy": "not_asserted"},
            "native": True,
        },
        {
            "name": "aiter-tuner-mean-101",
            "title": f"AMD aiter tuner · {STATISTIC}",
            "description": (
                "A tuner's measurement, not a published benchmark: aiter times each candidate kernel for a "
                "shape and keeps the fastest, so every row is the winner of its own search. The figure is "
                "the mean over 101 calls of the device time in the profiler's trace (metric "
                "latency:mean:ns; never ranked with medians). The tuner's err_ratio (its mismatch fraction "
                "against its reference) is kept on each run. The tables record no time: observed = the "
                "date of the upstream commit that holds them."
            ),
        },
    )
