"""The home page (/): for people first (issue 46 item 3) — one search box, the operation families with their
counts, the latest verified records, the sources whose figures were re-measured (their reproduction
court), and links to every operation; then corpus counts and sources with freshness. It reads the stored
summaries only, never an operation's runs."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from sqlalchemy import select

from kernelindex import urls
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.export import export_size
from kernelindex.catalog.models import ObjectRow
from kernelindex.catalog.source_tallies import SourceTally, stored_tallies
from kernelindex.domain.instants import as_utc
from kernelindex.domain.manifests import Source
from kernelindex.readmodel.cache import kept
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.operation_summary import LATEST_RECORDS, OperationFacts, newest_events
from kernelindex.readmodel.pages_common import CohortSummary
from kernelindex.readmodel.pages_records import LedgerEvent
from kernelindex.readmodel.source_notices import source_notice
from kernelindex.readmodel.summaries import operation_summaries, verified_events


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
class FamilyCount(JsonModel):
    family: str
    operations: int
    operations_measured: int  # with an eligible run
    operations_verified: int  # with an eligible verified run
    eligible_runs: int
    url: str  # its section of the operations index


@dataclass
class HomePage(JsonModel):
    tagline: str
    counts: dict[str, int]
    sources: list[SourceFreshness] = field(default_factory=list)
    latest_records: list[LedgerEvent] = field(default_factory=list)  # of any evidence
    latest_verified: list[LedgerEvent] = field(default_factory=list)  # held by a verified run
    families: list[FamilyCount] = field(default_factory=list)  # most measured operations first
    export_bytes: int = 0  # about how large the whole catalog's download is (JSON Lines)


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
    verified = [c for s in summaries if s.verified_runs for c in s.cohorts_with_leader()]
    return HomePage(TAGLINE, counts, _cached_sources(catalog), _latest([c for s in summaries for c in s.newest]),
                    _latest(verified, verified_only=True), _families(summaries),
                    kept(catalog, "export-size", (), lambda: export_size(catalog)))


def _latest(cohorts: list[CohortSummary], *, verified_only: bool = False) -> list[LedgerEvent]:
    if verified_only:  # the cohorts' events whose new holder is a verified run
        cohorts = [replace(c, events=verified_events(c.events)) for c in cohorts]
    return [LedgerEvent(s.operation, s.operation_title, s.key, s.label, s.workload_label, e, s.url)
            for s, e in newest_events(cohorts, LATEST_RECORDS)]


def _families(summaries: list[OperationFacts]) -> list[FamilyCount]:
    grouped: dict[str, list[OperationFacts]] = defaultdict(list)
    for s in summaries:
        grouped[s.family].append(s)
    families = [FamilyCount(family, len(ops), sum(1 for s in ops if s.eligible_runs),
                            sum(1 for s in ops if s.verified_regions), sum(s.eligible_runs for s in ops),
                            f"{urls.SEARCH}#{family_anchor(family)}") for family, ops in grouped.items()]
    return sorted(families, key=lambda f: (-f.operations_measured, f.family))


def family_anchor(family: str) -> str:
    """The id of a family's section on the operations index (``/search#family-gemm``)."""
    return "family-" + "".join(c if c.isalnum() else "-" for c in family.lower())


def _cached_sources(catalog: Catalog) -> list[SourceFreshness]:
    return kept(catalog, "sources-freshness", (), lambda: _sources(catalog))


def _sources(catalog: Catalog) -> list[SourceFreshness]:
    with catalog.engine.connect() as conn:
        bodies = [json.loads(b) for (b,) in conn.execute(select(ObjectRow.body).where(ObjectRow.kind == "Source"))]
        tallies = stored_tallies(conn)  # kept by each publication: not a count of every run (issue 50)
    return source_freshness([Source.model_validate(b) for b in bodies], tallies)


def source_freshness(manifests: list[Source], tallies: Mapping[str, SourceTally]) -> list[SourceFreshness]:
    """The sources block: every source with a manifest or a run, by name."""
    by_name = {m.spec.name: m for m in manifests}
    found = []
    for name in sorted(set(by_name) | {name for name, tally in tallies.items() if tally.runs}):
        notice = source_notice(name, by_name.get(name))
        tally = tallies.get(name, SourceTally())
        found.append(SourceFreshness(name, **notice.described(), runs=tally.runs,
                                     last_observed=as_utc(tally.last_observed),
                                     last_published=as_utc(tally.last_published),
                                     reproduction_url=urls.reproduction(name) if tally.reported_runs else None))
    return found


def sources_by_name(catalog: Catalog) -> dict[str, SourceFreshness]:
    """Every source by name, with its license and attribution sentence (for exports and downloads)."""
    return {s.name: s for s in _cached_sources(catalog)}
