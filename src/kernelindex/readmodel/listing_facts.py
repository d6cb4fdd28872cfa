"""What one operation contributes to the catalog-wide listings (``/api/v1/implementations``,
``/api/v1/workloads``): its implementation lines with a ranked run, and its measured workload cases.

Computed from the loaded operation by the functions the operation's pages and the resolver use (its
cohorts as ``cohorts_of`` ranks them, ``implementation_ref``), stored with the operation's summary
(``readmodel/summaries.py``) and gathered across operations by ``readmodel/listings.py``, so the
listings never rank every run of the catalog."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from kernelindex import registry
from kernelindex.readmodel.cohorts import Cohort, cohorts_of
from kernelindex.readmodel.labels import workload_key
from kernelindex.readmodel.loading import OperationData
from kernelindex.readmodel.rows import implementation_ref

Entry = dict[str, Any]


def implementation_lines(data: OperationData) -> list[Entry]:
    """One entry per implementation line (slug) with a ranked run here, in the order the cohorts first
    rank one (where two revisions of a line differ, the first ranked speaks for it): its facts and how
    many ranked runs it has (one row per implementation and cohort: replicates are not counted)."""
    implementation_of = {r.digest: r.implementation for r in data.runs}
    lines: dict[str, Entry] = {}
    by_digest: dict[str, Entry] = {}
    for cohort in cohorts_of(data).values():
        for entry in cohort.ranked:
            digest = implementation_of[entry.item.id]
            if (line := by_digest.get(digest)) is None:
                ref = implementation_ref(data, digest)
                line = by_digest[digest] = lines.setdefault(ref.slug, {
                    "slug": ref.slug, "title": ref.title, "project": ref.project, "language": ref.language,
                    "license": ref.license, "usable": ref.usable, "baseline": ref.role == "baseline",
                    "eligible_runs": 0})
            line["eligible_runs"] += 1
    return list(lines.values())


def workload_entries(data: OperationData) -> list[Entry]:
    """One entry per workload case with a run (eligible or not), in the order of its first cohort: its
    axes (the operation's declared order, the rest sorted), dtypes, ranked runs, GPUs and timed regions."""
    grouped: dict[str, list[Cohort]] = defaultdict(list)
    for cohort in cohorts_of(data).values():
        grouped[cohort.workload].append(cohort)
    declared = list((registry.curated_operation(data.slug) or data.operation).spec.axes)
    out = []
    for digest, cohorts in grouped.items():
        spec = data.workloads[digest].spec
        axes = spec.axes
        order = [a for a in declared if a in axes] + sorted(a for a in axes if a not in declared)
        out.append({
            "key": workload_key(digest), "digest": digest, "axes": {a: axes[a] for a in order},
            "dtypes": dict(spec.dtypes), "eligible_runs": sum(len(c.ranked) for c in cohorts),
            "gpus": sorted({gpu_short(data, c.runs[0].environment) for c in cohorts}),
            "modes": sorted({data.protocols[c.runs[0].protocol].spec.timed_region for c in cohorts}),
        })
    return out


def gpu_short(data: OperationData, environment: str) -> str:
    """An environment's GPU as the resolver and the listings name it: the registry's short name, else the
    product reported."""
    gpu = data.gpu_of(environment)
    return gpu.short if gpu else data.environments[environment].spec.hardware.product
