"""Catalog-wide listings the read model does not provide as indexes: workloads and implementations.

Computed from the same cohorts the resolver uses (so from the read model's runs and policy facts).
"""

from __future__ import annotations

from collections import Counter, defaultdict

from kernelindex import urls
from kernelindex.resolve.run_facts import ImplementationFacts
from kernelindex.resolve.source import CatalogCohortSource


def workloads_list(source: CatalogCohortSource, operation: str | None = None) -> list[dict[str, object]]:
    """One entry per workload case with eligible runs: its axes, dtypes, GPUs and modes measured."""
    vocab = source.vocabulary()
    slugs = [operation] if operation else source.operations()
    out: list[dict[str, object]] = []
    for slug in slugs:
        op = vocab.operations.get(slug)
        grouped: dict[str, list] = defaultdict(list)
        for cohort in source.cohorts(slug):
            grouped[cohort.sample.workload_key].append(cohort)
        for key, cohorts in grouped.items():
            sample = cohorts[0].sample
            order = [a for a in (op.axes if op else ()) if a in sample.axes] + sorted(
                a for a in sample.axes if not op or a not in op.axes)
            out.append({
                "operation": slug,
                "key": sample.workload_ref,
                "digest": key,
                "axes": {a: sample.axes[a] for a in order},
                "dtypes": dict(sample.dtypes),
                "eligible_runs": sum(c.eligible_runs for c in cohorts),
                "gpus": sorted({c.sample.gpu_label for c in cohorts}),
                "modes": sorted({c.sample.mode for c in cohorts}),
                "url": urls.operation(slug, ("workload", sample.workload_ref)),
            })
    return sorted(out, key=lambda w: (w["operation"], w["key"]))


def implementations_list(source: CatalogCohortSource) -> list[dict[str, object]]:
    """One entry per implementation line, with the operations it has eligible runs for."""
    found: dict[str, ImplementationFacts] = {}
    operations: dict[str, set[str]] = defaultdict(set)
    eligible_runs: Counter[str] = Counter()
    for slug in source.operations():
        for cohort in source.cohorts(slug):
            for run, *_ in cohort.ranked:
                found.setdefault(run.implementation.slug, run.implementation)
                operations[run.implementation.slug].add(slug)
                eligible_runs[run.implementation.slug] += 1
    return [
        {"slug": impl.slug, "title": impl.title, "project": impl.project, "language": impl.language,
         "license": impl.license, "usable": impl.usable, "baseline": impl.baseline,
         "operations": sorted(operations[key]), "eligible_runs": eligible_runs[key], "url": urls.implementation(key)}
        for key, impl in sorted(found.items())
    ]
