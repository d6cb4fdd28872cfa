"""Catalog-wide listings the operation pages do not provide: implementation lines and workload cases
(``/api/v1/implementations``, ``/api/v1/workloads``), gathered from each operation's stored summary
(``readmodel/summaries.py``, its ``listing_facts``) so that neither ranks every run of the catalog.

Nothing here depends on the day; ``now`` is only the clock the summaries are read with."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from kernelindex import urls
from kernelindex.catalog.db import Catalog
from kernelindex.readmodel.summaries import operation_summaries, workloads_of


def implementations_list(catalog: Catalog, *, now: datetime | None = None) -> list[dict[str, Any]]:
    """One entry per implementation line, with the operations it has ranked runs for (where revisions of
    a line differ, the one the first operation, by slug, ranks first speaks for it)."""
    found: dict[str, dict[str, Any]] = {}
    operations: dict[str, list[str]] = defaultdict(list)
    for facts in operation_summaries(catalog, now=now or datetime.now(UTC)):
        for line in facts.implementations:
            slug = line["slug"]
            entry = found.setdefault(slug, {**line, "eligible_runs": 0})
            entry["eligible_runs"] += line["eligible_runs"]
            operations[slug].append(facts.slug)
    return [{**{k: v for k, v in entry.items() if k != "eligible_runs"}, "operations": sorted(operations[slug]),
             "eligible_runs": entry["eligible_runs"], "url": urls.implementation(slug)}
            for slug, entry in sorted(found.items())]


def workloads_list(catalog: Catalog, operation: str | None = None, *,
                   now: datetime | None = None) -> list[dict[str, Any]]:
    """One entry per workload case with a run, of one operation or of all, by operation and key: its axes,
    dtypes, ranked runs, and the GPUs and timed regions measured."""
    summaries = operation_summaries(catalog, now=now or datetime.now(UTC))
    chosen = workloads_of(catalog, summaries) if operation is None else {
        facts.slug: facts.workloads for facts in summaries if facts.slug == operation}
    out = [{"operation": slug, **entry, "url": urls.operation(slug, ("workload", entry["key"]))}
           for slug, entries in chosen.items() for entry in entries]
    return sorted(out, key=lambda w: (w["operation"], w["key"]))
