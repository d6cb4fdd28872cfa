"""Derived keys: a cohort is one workload × protocol × environment × metric."""

from __future__ import annotations

from kernelindex.domain.canonical import sha256_digest

LATENCY_METRIC = "latency:median:ns"


def cohort_key(workload: str, protocol: str, environment: str, metric: str = LATENCY_METRIC) -> str:
    return sha256_digest(
        {"workload": workload, "protocol": protocol, "environment": environment, "metric": metric}
    )
