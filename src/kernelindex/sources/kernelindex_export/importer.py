"""``ki import kernelindex-export FILE``: snapshot → read → map per source under the source policy →
report → publish (one transaction per publishable source)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kernelindex import registry
from kernelindex.catalog.collector import collector_paused
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.publish import publish_manifests
from kernelindex.policy.source_policy import REFUSED_BY_POLICY, refusal_reason
from kernelindex.sources.base import Transport
from kernelindex.sources.kernelindex_export.mapping import ExportMapper, MappedSource, Progress
from kernelindex.sources.kernelindex_export.read import NOT_IMPORTED, read_export


@dataclass
class ExportReport:
    locator: str
    snapshot_digest: str
    sources: dict[str, MappedSource] = field(default_factory=dict)
    decisions: dict[str, str] = field(default_factory=dict)  # source → what happened, in words
    not_imported: dict[str, tuple[int, str]] = field(default_factory=dict)  # table → (rows, reason)
    new: Counter = field(default_factory=Counter)
    existing: Counter = field(default_factory=Counter)
    published: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "locator": self.locator,
            "snapshot_digest": self.snapshot_digest,
            "sources": {
                slug: {"decision": self.decisions[slug],
                       "tables": {t: c.to_json() for t, c in mapped.counts.items()}}
                for slug, mapped in sorted(self.sources.items())
            },
            "not_imported": {t: {"rows": n, "reason": r} for t, (n, r) in sorted(self.not_imported.items())},
            "new": dict(self.new),
            "existing": dict(self.existing),
            "published": self.published,
        }


def map_export_content(
    content: bytes, locator: str, digest: str, *, only_source: str | None = None, progress: Progress | None = None
) -> ExportReport:
    tables = read_export(content, locator)
    report = ExportReport(locator, digest)
    for table, rows in sorted(tables.other.items()):
        report.not_imported[table] = (rows, NOT_IMPORTED.get(table, "a table this importer does not read"))
    mapper = ExportMapper(tables, progress)
    grouped = mapper.runs_by_source()
    total = sum(len(r) for r in grouped.values())
    for slug, runs in sorted(grouped.items()):
        policy = registry.source_policy(slug)
        if reason := refusal_reason(slug, registry.refused_sources(), registry.source_policies()):
            report.sources[slug] = mapper.refuse(runs)
            report.decisions[slug] = f"{REFUSED_BY_POLICY}: {reason}"
        elif only_source and slug != only_source:
            report.sources[slug] = mapper.skip(runs, f"not selected (--source {only_source})")
            report.decisions[slug] = "skipped: not selected"
        else:
            report.sources[slug] = mapper.publishable(slug, runs, total)
            assert policy is not None  # listed: refusal_reason refuses unlisted sources
            report.decisions[slug] = f"{policy.decision.replace('_', ' ')} ({policy.license})"
    return report


@collector_paused()
def import_export(
    catalog: Catalog,
    transport: Transport,
    *,
    dry_run: bool,
    actor: str,
    only_source: str | None = None,
    progress: Progress | None = None,
) -> ExportReport:
    snapshot = transport.fetch()
    report = map_export_content(snapshot.content, snapshot.locator, snapshot.digest, only_source=only_source,
                                progress=progress)
    for slug, mapped in sorted(report.sources.items()):
        if not mapped.manifests:
            continue
        result = publish_manifests(catalog, mapped.manifests, actor=actor, source=slug,
                                   refused_sources=registry.refused_sources(),
                                   snapshot_digest=snapshot.digest, locator=snapshot.locator, dry_run=dry_run)
        report.new.update(result.new)
        report.existing.update(result.existing)
    report.published = not dry_run
    return report
