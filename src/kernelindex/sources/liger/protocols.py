"""How Liger-Kernel's benchmark scripts measure: latency with ``triton.testing.do_bench``, and a second
metric, the process-wide peak of allocated memory (MiB). Both protocols share the scripts' statistic
and naming; ``variant`` is what the script's call also does beyond the region (a labelled variant, its
own cohort)."""

from __future__ import annotations

from typing import Any

from kernelindex.domain.manifests import BenchmarkProtocol, build

NO_GRAD_WORDS = (" The source's 'no-grad-forward' mode: the forward call timed inside torch.no_grad(), so no "
                 "autograd graph is recorded and a fused loss may skip the gradient work it does in 'forward'; "
                 "never ranked with forward runs.")


def latency_protocol(harness: str, mode: str, variant: str | None = None) -> BenchmarkProtocol:
    description = ("Repetition count is set per script (do_bench rep) and not recorded in the CSV."
                   + (NO_GRAD_WORDS if mode == "forward-no-grad" else "")
                   + (f" Variant: {variant}; never ranked with the plain {mode} runs." if variant else ""))
    return _scripts_protocol(harness, mode, variant, measured={
        "timer": "triton.testing.do_bench: CUDA events around each call",
        "setup_excluded": True,
        "warmup": {"time_ns": "25ms"},
        "repetitions": {},
        "l2_policy": "L2 cleared before each timed call (do_bench writes a 256 MB buffer)",
        "input_regeneration": "none: the same inputs for every call",
    }, what="", description=description)


def memory_protocol(harness: str, mode: str, variant: str | None = None) -> BenchmarkProtocol:
    """Not a timer: a peak of torch's allocator over the call."""
    return _scripts_protocol(harness, mode, variant, measured={
        "timer": "none: torch.cuda.max_memory_allocated() after torch.cuda.reset_peak_memory_stats(), "
                 "one value per repetition",
        "setup_excluded": False,
        "warmup": {},
        "repetitions": {"count": 10},
        "l2_policy": "not applicable (a memory measurement)",
        "input_regeneration": "none: the same inputs for every repetition",
    }, what="peak memory", description="The peak includes every tensor alive in the process (inputs, the "
                                       "module, autograd state), not only what the kernel allocates.")


def _scripts_protocol(harness: str, mode: str, variant: str | None, *, measured: dict[str, Any], what: str,
                      description: str) -> BenchmarkProtocol:
    spec = {"harness": {"name": harness}, "timed_region": mode, **measured, "statistic": "median",
            "quantiles": [0.2, 0.5, 0.8], "correctness": {"policy": "not_asserted"}, "native": True,
            **({"variant": variant} if variant else {})}
    name = "-".join(["liger-benchmark-scripts", *([what.replace(" ", "-")] if what else []), mode.replace("+", "-"),
                     *([variant.split(":")[0].replace(" ", "-")] if variant else [])])
    title = " · ".join(["Liger-Kernel benchmark scripts", *([what] if what else []), mode])
    return build("BenchmarkProtocol", spec, {"name": name, "title": title + (f" ({variant})" if variant else ""),
                                             "description": description})
