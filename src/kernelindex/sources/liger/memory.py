"""Liger's memory rows: a second metric, the process-wide peak of allocated memory (MiB)."""

from __future__ import annotations

from kernelindex.domain.manifests import BenchmarkProtocol, build
from kernelindex.policy.cohorts import PEAK_MEMORY_LABEL

__all__ = ["PEAK_MEMORY_LABEL", "memory_protocol"]


def memory_protocol(harness: str, mode: str, variant: str | None = None) -> BenchmarkProtocol:
    """How the scripts measure memory: not a timer, a peak of torch's allocator over the call
    (``variant``: what the call also does beyond the region, as for the latency protocol)."""
    return build(
        "BenchmarkProtocol",
        {
            "harness": {"name": harness},
            "timer": "none: torch.cuda.max_memory_allocated() after torch.cuda.reset_peak_memory_stats(), "
            "one value per repetition",
            "timed_region": mode,
            "setup_excluded": False,
            "warmup": {},
            "repetitions": {"count": 10},
            "l2_policy": "not applicable (a memory measurement)",
            "input_regeneration": "none: the same inputs for every repetition",
            "statistic": "median",
            "quantiles": [0.2, 0.5, 0.8],
            "correctness": {"policy": "not_asserted"},
            "native": True,
            **({"variant": variant} if variant else {}),
        },
        {
            "name": f"liger-benchmark-scripts-peak-memory-{mode.replace('+', '-')}"
            + (f"-{variant.split(':')[0].replace(' ', '-')}" if variant else ""),
            "title": f"Liger-Kernel benchmark scripts · peak memory · {mode}" + (f" ({variant})" if variant else ""),
            "description": "The peak includes every tensor alive in the process (inputs, the module, "
            "autograd state), not only what the kernel allocates.",
        },
    )
