"""The home page (/): corpus counts, sources with freshness, latest records."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import func, select

from kernelindex import urls
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import ObjectRow, PublicationRow, RunRow
from kernelindex.domain.instants import as_utc
from kernelindex.domain.manifests import Source
from kernelindex.readmodel.cache import kept
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.pages_common import CohortSummary
from kernelindex.readmodel.pages_records import LedgerEvent
from kernelindex.readmodel.source_notices import source_notice
from kernelindex.readmodel.summaries import LATEST_RECORDS, newest_events, operation_summaries


@dataclass
class SourceFreshness(JsonModel):
    name: str
    title: str
    url: str | None
    license: str | None
    attribution: str | None
    runs: int
    last_observed: datetime | None
    last_published: datetime | None
    license_name: str | None = None
    license_url: str | None = None
    reproduction_url: str | None = None  # its reproduction court, for a source that reported figures (issue 44)


@dataclass
class OperationLink(JsonModel):
    slug: str
    title: str
    family: str
    eligible_runs: int
    url: str


@dataclass
class HomePage(JsonModel):
    tagline: str
    counts: dict[str, int]
    sources: list[SourceFreshness] = field(default_factory=list)
    latest_records: list[LedgerEvent] = field(default_factory=list)
    operations: list[OperationLink] = field(default_factory=list)


TAGLINE = ("The fastest known GPU kernel for an exact workload — operation, shapes, dtype, GPU — "
           "with the evidence behind the number and the physical floor beside it.")


def home_page(catalog: Catalog, *, now: datetime) -> HomePage:
    summaries = operation_summaries(catalog, now=now)
    counts = {
        "operations": len(summaries),
        "operations_measured": sum(1 for s in summaries if s.eligible_runs),
        "implementations": len({line for s in summaries for line in s.lines}),
        "eligible_runs": sum(s.eligible_runs for s in summaries),
        "verified_runs": sum(s.verified_runs for s in summaries),
        "operations_verified": sum(1 for s in summaries if s.verified_regions),
        "operations_verified_backward": sum(1 for s in summaries if set(s.verified_regions) - {"forward"}),
        "cohorts": sum(s.leading_cohorts for s in summaries),
    }
    operations = sorted(
        (OperationLink(s.slug, s.title, s.family, s.eligible_runs, urls.operation(s.slug)) for s in summaries),
        key=lambda o: (-o.eligible_runs, o.slug),
    )
    return HomePage(TAGLINE, counts, _cached_sources(catalog), _latest([c for s in summaries for c in s.newest]),
                    operations)


def _latest(cohorts: list[CohortSummary]) -> list[LedgerEvent]:
    return [LedgerEvent(s.operation, s.operation_title, s.key, s.label, s.workload_label, e, s.url)
            for s, e in newest_events(cohorts, LATEST_RECORDS)]


def _cached_sources(catalog: Catalog) -> list[SourceFreshness]:
    return kept(catalog, "sources-freshness", (), lambda: _sources(catalog))


def _sources(catalog: Catalog) -> list[SourceFreshness]:
    with catalog.engine.connect() as conn:
        bodies = [json.loads(b) for (b,) in conn.execute(select(ObjectRow.body).where(ObjectRow.kind == "Source"))]
        runs = {name: (n, last) for name, n, last in conn.execute(
            select(RunRow.source, func.count(), func.max(RunRow.observed_at)).group_by(RunRow.source))}
        published = dict(conn.execute(select(PublicationRow.source, func.max(PublicationRow.at))
                                      .group_by(PublicationRow.source)).tuples().all())
        reported = set(conn.execute(select(RunRow.source).where(RunRow.runner_key_id.is_(None)).distinct()).scalars())
    found = []
    manifests = {m.spec.name: m for m in map(Source.model_validate, bodies)}
    for name in sorted(set(manifests) | set(runs)):
        notice = source_notice(name, manifests.get(name))
        count, last = runs.get(name, (0, None))
        found.append(SourceFreshness(name, **notice.described(), runs=count, last_observed=as_utc(last),
                                     last_published=as_utc(published.get(name)),
                                     reproduction_url=urls.reproduction(name) if name in reported else None))
    return found


def sources_by_name(catalog: Catalog) -> dict[str, SourceFreshness]:
    """Every source by name, with its license and attribution sentence (for exports and downloads)."""
    return {s.name: s for s in _cached_sources(catalog)}
