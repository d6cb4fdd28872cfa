"""Derived keys: a cohort is one workload × protocol × environment × metric.

The environment part is ``environment_key``: the hardware and the platform software only. What a
runner measured in that environment (copy bandwidth, clocks seen) is stored with it but does
not split cohorts — two campaigns on the same GPU and software stack compete in one cohort —
and neither do the packages whose kernels are themselves implementations (``IMPLEMENTATION_PACKAGES``).
"""

from __future__ import annotations

from kernelindex.domain.canonical import sha256_digest

LATENCY_METRIC = "latency:median:ns"
PEAK_MEMORY_METRIC = "peak_memory:median:MiB"
PEAK_MEMORY_LABEL = "peak allocated memory of the benchmark process, as the source measured it"


MEAN_LATENCY_METRIC = "latency:mean:ns"


def run_metric(run_spec: dict) -> str:
    """The metric a run measures, part of its cohort: median latency, mean latency (a source that
    reports means: never ranked with medians), peak memory, or a suite's leaderboard score."""
    timing = run_spec.get("timing") or {}
    score = run_spec.get("score")
    return metric_of(bool(run_spec.get("memory")), score["statistic"] if score else None, timing.get("median_ns"),
                     timing.get("mean_ns"))


def metric_of(memory: bool, score_statistic: str | None, median_ns: int | None, mean_ns: int | None) -> str:
    """``run_metric`` from the figures it looks at (what the read model has typed)."""
    if memory:
        return PEAK_MEMORY_METRIC
    if score_statistic is not None:
        return f"score:{score_statistic}:s"
    if median_ns is None and mean_ns is not None:
        return MEAN_LATENCY_METRIC
    return LATENCY_METRIC


def is_latency(metric: str) -> bool:
    return metric.startswith("latency:")


def primary_latency_ns(run_spec: dict) -> int | None:
    """The value a latency cohort ranks: the median, or the mean in a mean cohort."""
    timing = run_spec.get("timing") or {}
    return timing.get("median_ns") if timing.get("median_ns") is not None else timing.get("mean_ns")


# Packages whose kernels are implementations in the catalog (Liger-Kernel's, Transformers' modules). Every
# implementation revision that runs them pins their version, so whether a campaign had them installed says
# nothing about the platform the other implementations ran on: a GEMM campaign that left Liger out is the same
# H200, driver, CUDA, Python, torch and Triton as one that installed it. Recorded, shown, never splitting cohorts.
IMPLEMENTATION_PACKAGES = frozenset({"liger-kernel", "transformers"})


def environment_key(environment_spec: dict) -> str:
    """Two environments are one when their hardware and platform software are identical; what a runner
    measured there (bandwidths, clocks) and which implementation packages were installed do not change the key."""
    software = {name: version for name, version in environment_spec.get("software", {}).items()
                if name not in IMPLEMENTATION_PACKAGES}
    return sha256_digest({"hardware": environment_spec["hardware"], "software": software})


def cohort_key(workload: str, protocol: str, environment_key: str, metric: str = LATENCY_METRIC) -> str:
    """Runs compete only with runs of the same workload, protocol, environment and metric: the key
    is the digest of those four."""
    return sha256_digest({"workload": workload, "protocol": protocol, "environment": environment_key, "metric": metric})


def former_cohort_keys(workload: str, protocol: str, environment_spec: dict, environment_digest: str,
                       metric: str = LATENCY_METRIC) -> frozenset[str]:
    """The keys this cohort was shared under by earlier rules, so links that carry one keep working (a key
    is a digest: it cannot say what it meant). Each rule is frozen here as it was:

    - until 2026-11-29 the environment part was the environment manifest's own digest, so what a runner
      measured there (bandwidths, clocks) split cohorts;
    - until 2026-12-03 it was the hardware and every software entry, the implementation packages included
      (migration 0010 re-keyed the stored runs).
    """
    every_package = sha256_digest({"hardware": environment_spec["hardware"],
                                   "software": environment_spec.get("software", {})})
    keys = {cohort_key(workload, protocol, part, metric) for part in (environment_digest, every_package)}
    return frozenset(keys - {cohort_key(workload, protocol, environment_key(environment_spec), metric)})
