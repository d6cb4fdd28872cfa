"""Derived keys: a cohort is one workload × protocol × environment × metric.

The environment part is ``environment_key``: the hardware and software identity only. What a
runner measured in that environment (copy bandwidth, clocks seen) is stored with it but does
not split cohorts — two campaigns on the same GPU and software stack compete in one cohort.
"""

from __future__ import annotations

from kernelindex.domain.canonical import sha256_digest

LATENCY_METRIC = "latency:median:ns"


def environment_key(environment_spec: dict) -> str:
    """Two environments are one when their hardware and software are identical; what a runner
    measured there (bandwidths, clocks) does not change the key."""
    return sha256_digest({"hardware": environment_spec["hardware"], "software": environment_spec.get("software", {})})


def cohort_key(workload: str, protocol: str, environment_key: str, metric: str = LATENCY_METRIC) -> str:
    """Runs compete only with runs of the same workload, protocol, environment and metric: the key
    is the digest of those four."""
    return sha256_digest({"workload": workload, "protocol": protocol, "environment": environment_key, "metric": metric})
