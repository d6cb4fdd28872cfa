"""How objects are named on every surface (one wording for pages, API and CLI)."""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Sequence
from typing import NamedTuple

from kernelindex import registry
from kernelindex.domain import titles
from kernelindex.domain.canonical import short_digest
from kernelindex.domain.manifests import (
    BenchmarkProtocol,
    ExecutionEnvironment,
    ImplementationRevision,
    OperationSpec,
    SoftwareProject,
    WorkloadCase,
)

MODE_WORDS = {"forward": "forward", "backward": "backward", "forward+backward": "forward+backward",
              "forward-no-grad": "forward under torch.no_grad()"}


def axis_order(operation: OperationSpec) -> list[str]:
    """Non-derived axes in the order the curated spec declares them (canonical JSON sorts keys,
    so the stored body has lost it; the registry keeps it)."""
    curated = registry.curated_operation(operation.metadata.name or "")
    axes = curated.spec.axes if curated is not None else None
    names = list(axes) if axes else list(operation.spec.axes)
    return [n for n in names if operation.spec.axes[n].role != "derived"]


def workload_label(operation: OperationSpec, workload: WorkloadCase) -> str:
    """'seq = 2048 · hidden = 8192 · q_heads = 32 · kv_heads = 8 · bf16' in the operation's axis order."""
    spec = workload.spec
    axes = spec.axes
    order = [n for n in axis_order(operation) if n in axes]
    order += [n for n in axes if n not in order]
    parts = [f"{n} = {axes[n]}" for n in order]
    parts += [f"{k} = {v}" for k, v in sorted(spec.params.items())]
    parts += sorted(set(spec.dtypes.values()))
    return " · ".join(parts)


def natural_key(label: str) -> tuple[object, ...]:
    """Sort key that orders numbers by value: 'seq = 2048' before 'seq = 16384'."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", label))


def workload_key(digest: str) -> str:
    return short_digest(digest)


def cohort_key_short(cohort_key: str) -> str:
    return short_digest(cohort_key)


def gpu_label(environment: ExecutionEnvironment) -> str:
    product = environment.spec.hardware.product
    gpu = registry.gpu_for_product(product)
    return gpu.name if gpu else product


def protocol_label(protocol: BenchmarkProtocol) -> str:
    spec = protocol.spec
    return f"{spec.harness.name} · {MODE_WORDS.get(spec.timed_region, spec.timed_region)}"


def cohort_label(environment: ExecutionEnvironment, protocol: BenchmarkProtocol) -> str:
    """What distinguishes a cohort of one workload: GPU, timed region, harness — never 'env 2'."""
    spec = protocol.spec
    harness = "KernelIndex runner" if not spec.native else spec.harness.name
    variant = f" ({spec.variant})" if spec.variant else ""
    return f"{gpu_label(environment)} · {spec.timed_region}{variant} · {harness}"


def implementation_title(implementation: ImplementationRevision) -> str:
    metadata, symbol = implementation.metadata, implementation.spec.callable.symbol
    return titles.implementation_title(metadata.title, symbol, metadata.labels.get("authors"))


# Names are cut at 120 characters where they are made (the runner's KernelBench lines): two callables of one
# problem (torch.compile max-autotune and max-autotune-no-cudagraphs, KernelBench 1/75) may meet there.
NAME_LIMIT = 120


def implementation_slug(implementation: ImplementationRevision) -> str:
    """The implementation line's slug: its name; a name cut at ``NAME_LIMIT`` gets a short hash of its callable,
    so two lines never share one slug (their page, their row of Implementations, their CSV rows)."""
    name = implementation.metadata.name
    if not name:
        return short_digest(implementation.spec.project)
    if len(name) >= NAME_LIMIT:
        symbol = implementation.spec.callable.symbol or ""
        return f"{name}-{hashlib.sha256(symbol.encode()).hexdigest()[:6]}"
    return name


def project_title(project: SoftwareProject) -> str:
    return project.metadata.title or project.spec.name


class Shown(NamedTuple):
    """One cohort or run shown beside others: what it reads as, who measured it, under what protocol."""

    reads_as: str  # the label (and workload) a reader sees
    runner: str | None  # the runner that measured it; None when a source reported it
    protocol: str  # the protocol's digest


def tell_apart(shown: Sequence[Shown]) -> list[str | None]:
    """What tells apart entries shown together that would read alike: the runner that measured each
    when their runners differ ("runner NAME"), and the protocol where one runner (or none) measured
    alike entries under several ("protocol 1a2b3c4d5e6f"); None where nothing shown reads like it.
    One rule for the operation page's cohorts and headline cards, search's cohorts and compare's runs."""
    alike: dict[str, list[int]] = defaultdict(list)
    for i, entry in enumerate(shown):
        alike[entry.reads_as].append(i)
    told: list[str | None] = [None] * len(shown)
    for group in (g for g in alike.values() if len(g) > 1):
        entries = [shown[i] for i in group]
        named_runners = len({e.runner for e in entries}) > 1
        protocols: dict[str | None, set[str]] = defaultdict(set)
        for e in entries:
            protocols[e.runner].add(e.protocol)
        for i, e in zip(group, entries, strict=True):
            parts = [f"runner {e.runner}"] if named_runners and e.runner else []
            if len(protocols[e.runner]) > 1:
                parts.append(f"protocol {short_digest(e.protocol)}")
            told[i] = " · ".join(parts) or None
    return told


def told(label: str, distinction: str | None) -> str:
    """A label with what tells it apart from a look-alike shown beside it, when there is one."""
    return f"{label} · {distinction}" if distinction else label
