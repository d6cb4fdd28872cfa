"""The stored operation summaries: each operation's summary (``OperationModel.summary``,
``readmodel/operation_summary.py``: what the site-wide pages and the catalog-wide listings read of it, so that
none of them loads every run), serialized and written once to the catalog (``operation_summaries``) under the
version of the operation's data (``readmodel/versions.py``: it moves with every publication, retraction or
supersession that touches the operation) and a fingerprint of the code that computed it, and read back by every
worker. What depends on the day (whether a run is stale) is not stored: the run's ``observed_at`` is, and
staleness is decided when the summary is read, with the page's clock."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar

import orjson
from sqlalchemy import delete, insert, select
from sqlalchemy.exc import SQLAlchemyError

from kernelindex.catalog.collector import collector_paused
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import ObjectRow, OperationSummaryRow
from kernelindex.policy.evidence import LEVELS, VERIFIED_LEVELS
from kernelindex.policy.staleness import is_stale
from kernelindex.readmodel.attainable import AttainableRates, rates_from_json
from kernelindex.readmodel.cache import READ_CACHE
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.leaderboard import ScoreShare
from kernelindex.readmodel.listing_facts import Entry
from kernelindex.readmodel.loading import ONE_BY_ONE, OperationData, load_all_operations, load_operation
from kernelindex.readmodel.operation_model import OperationModel
from kernelindex.readmodel.operation_summary import (
    GpuShare,
    OperationFacts,
)
from kernelindex.readmodel.pages_common import CohortSummary, EventView, RunRef
from kernelindex.readmodel.summary_form import stored_column, summary_form
from kernelindex.readmodel.versions import VERSIONS, Versions

log = logging.getLogger("kernelindex.readmodel")
T = TypeVar("T")
# Any instant serves to compute a summary: the one field that depends on the clock (a run's ``stale``)
# is decided again when the summary is read.
_COMPUTED_AT = datetime(2000, 1, 1, tzinfo=UTC)
_WRITE_CHUNK = 200
# The evidence levels a cohort's leader can hold, best first: what the records ledger filters by.
EVIDENCE_LEVELS: tuple[str, ...] = LEVELS
Stored = tuple[bytes, bytes, bytes, bytes]  # a summary as stored: its body, cohorts, workloads, counts (JSON)


def operation_summaries(catalog: Catalog, *, now: datetime) -> list[OperationFacts]:
    """Every operation's summary, by slug, as of ``now`` (kept per catalog version and day)."""
    versions = VERSIONS.current(catalog)
    day = now.date().isoformat()
    return READ_CACHE.get(catalog, ("operation-summaries", day),
                          lambda: _gather(catalog, versions, now, _slugs(catalog)), version=versions.catalog)


@dataclass
class OperationCounts(JsonModel):
    """What the search chooser weighs of an operation: its eligible runs (as its page counts them),
    those per GPU (registry slug), and its leaderboard score runs per GPU; and its verified runs' rates, which
    the attainable ceilings read of every verified operation (a few bytes here, not the summary's body)."""

    eligible_runs: int
    gpus: dict[str, int]
    scores: list[ScoreShare]
    attainable: AttainableRates


def counts_in(summary: OperationFacts) -> OperationCounts:
    return OperationCounts(summary.eligible_runs, {g.gpu: g.eligible_runs for g in summary.gpus}, summary.scores,
                           summary.attainable)


def counts_of(catalog: Catalog, slugs: Collection[str], *, now: datetime) -> dict[str, OperationCounts]:
    """The counts of these operations by slug (those the catalog holds): the small column stored beside
    each summary, read in one pass without the bodies; a summary not stored yet is computed (``_gather``)."""
    versions = VERSIONS.current(catalog)
    wanted = {slug: versions.of(slug) for slug in set(slugs).intersection(_slugs(catalog))}
    stored = stored_column(catalog, wanted, OperationSummaryRow.counts)
    found = {slug: _counts(orjson.loads(text)) for slug, text in stored.items()}
    if missing := sorted(slug for slug in wanted if slug not in found):
        found.update((s.slug, counts_in(s)) for s in _gather(catalog, versions, now, missing))
    return found


def _counts(body: dict[str, Any]) -> OperationCounts:
    return OperationCounts(body["eligible_runs"], body["gpus"], [ScoreShare(**s) for s in body["scores"]],
                           rates_from_json(body["attainable"]))


def workloads_of(catalog: Catalog, summaries: list[OperationFacts]) -> dict[str, list[Entry]]:
    """The workload entries of these summaries, by slug: those stored at the summary's version read in
    one pass (not one query per operation), the others as each summary reads its own."""
    versions = VERSIONS.current(catalog)
    stored = stored_column(catalog, {s.slug: versions.of(s.slug) for s in summaries}, OperationSummaryRow.workloads)
    return {s.slug: orjson.loads(stored[s.slug]) if s.slug in stored else s.workloads for s in summaries}


def _gather(catalog: Catalog, versions: Versions, now: datetime, slugs: list[str]) -> list[OperationFacts]:
    day = now.date().isoformat()
    found: dict[str, OperationFacts | None] = {
        slug: READ_CACHE.peek(catalog, ("operation-summary", slug, day), versions.of(slug), scope=slug)
        for slug in slugs}
    missing = {slug: versions.of(slug) for slug, summary in found.items() if summary is None}
    bodies = stored_column(catalog, missing)
    held: dict[str, Stored] = {}  # those computed here, if they could not be stored
    unsaved = [slug for slug in missing if slug not in bodies]
    if unsaved:
        computed = computed_summaries(catalog, unsaved)
        if not _write(catalog, {slug: (missing[slug], stored) for slug, stored in computed.items()}):
            held = computed
        bodies.update((slug, stored[0]) for slug, stored in computed.items())
    for slug, version in missing.items():
        kept = held.get(slug)
        summary = found[slug] = _decoded(
            bodies[slug], partial(_cohorts, catalog, slug, version, now, kept[1] if kept else None),
            partial(_workloads, catalog, slug, version, kept[2] if kept else None), now)
        READ_CACHE.put(catalog, ("operation-summary", slug, day), summary, version=version, scope=slug)
    return [summary for summary in found.values() if summary is not None]


def _cohorts(catalog: Catalog, slug: str, version: int, now: datetime, held: bytes | None) -> list[CohortSummary]:
    """The operation's stored cohort summaries at ``version`` (see ``_part``)."""
    return [_cohort(c, now) for c in orjson.loads(held or _part(catalog, slug, version, OperationSummaryRow.cohorts))]


def _workloads(catalog: Catalog, slug: str, version: int, held: bytes | None) -> list[Entry]:
    """The operation's stored workload entries at ``version`` (see ``_part``)."""
    return orjson.loads(held or _part(catalog, slug, version, OperationSummaryRow.workloads))


def _part(catalog: Catalog, slug: str, version: int, column: Any) -> bytes:
    """A column of the operation's stored summary at ``version`` (or, when a newer version replaced it in
    the meantime, the newest stored: the page asking is about to be computed again anyway). When none is
    stored at that version or later — a worker that computed an older version stored it last, replacing
    the newer one, during concurrent publications — it is computed here (it was a NoResultFound: a 500 on
    /challenges, issue 51)."""
    with catalog.engine.connect() as conn:
        stored = conn.execute(select(column).where(
            OperationSummaryRow.operation == slug, OperationSummaryRow.form == summary_form(),
            OperationSummaryRow.version >= version).order_by(OperationSummaryRow.version).limit(1)
        ).scalar()
    if stored is not None:
        return str(stored).encode()
    computed = computed_summaries(catalog, [slug])[slug]
    return computed[1] if column is OperationSummaryRow.cohorts else computed[2]


def ensure_summaries(catalog: Catalog) -> int:
    """Compute and store the summaries the catalog lacks at its current version (after an import, so a
    fresh install's first home page reads them instead of loading every run); returns how many."""
    versions = VERSIONS.current(catalog)
    wanted = {slug: versions.of(slug) for slug in _slugs(catalog)}
    present = stored_column(catalog, wanted, OperationSummaryRow.version)
    missing = [slug for slug in wanted if slug not in present]
    if missing:
        _write(catalog, {slug: (wanted[slug], stored) for slug, stored in computed_summaries(catalog, missing).items()})
    return len(missing)


def _slugs(catalog: Catalog) -> list[str]:
    with catalog.engine.connect() as conn:
        names = conn.execute(select(ObjectRow.name).where(ObjectRow.kind == "OperationSpec")).scalars()
        return sorted(name for name in names if name is not None)


@collector_paused()  # summarising every operation walks ~10^6 held objects: a quarter of the pass went to collections
def computed_summaries(catalog: Catalog, slugs: list[str]) -> dict[str, Stored]:
    """The summaries of these operations computed from their runs, as JSON (their data versions are the
    current ones). Many operations are loaded in one pass; the pass is then let go (every page of an
    operation loads it again when asked), so a worker does not keep every run for having summarised them."""
    if len(slugs) <= ONE_BY_ONE:
        return {slug: _encoded(summarize(load_operation(catalog, slug))) for slug in slugs}
    everything = load_all_operations(catalog)
    summaries = {slug: _encoded(summarize(everything[slug])) for slug in slugs if slug in everything}
    del everything
    READ_CACHE.forget(catalog, lambda key: isinstance(key, tuple) and bool(key)
                      and str(key[0]).startswith(("operation-data", "operation-with-attainable")))
    return summaries


def summarize(data: OperationData) -> OperationFacts:
    """The operation's summary, from its loaded runs: its model's (``OperationModel.summary``), at a clock of
    its own, so the page's model kept on the operation stays (staleness is left for the reader)."""
    return OperationModel(data, _COMPUTED_AT).summary()


def _write(catalog: Catalog, rows: dict[str, tuple[int, Stored]]) -> bool:
    """Keep these summaries (slug → (version, stored)) in place of any older ones; False when they could
    not be. Another worker may write the same ones at the same time: one write stands, both are the same."""
    items = sorted(rows.items())
    try:
        for start in range(0, len(items), _WRITE_CHUNK):
            chunk = items[start:start + _WRITE_CHUNK]
            with catalog.engine.begin() as conn:
                conn.execute(delete(OperationSummaryRow).where(
                    OperationSummaryRow.operation.in_([slug for slug, _ in chunk])))
                conn.execute(insert(OperationSummaryRow), [
                    {"operation": slug, "version": version, "form": summary_form(), "body": body.decode(),
                     "cohorts": cohorts.decode(), "workloads": workloads.decode(), "counts": counts.decode()}
                    for slug, (version, (body, cohorts, workloads, counts)) in chunk])
    except SQLAlchemyError as exc:  # a read-only catalog, or a concurrent writer: serve what was computed
        log.warning("operation summaries were not stored (%s); they are computed again by the next worker",
                    exc.__class__.__name__)
        return False
    return True


def _encoded(summary: OperationFacts) -> Stored:
    # orjson writes dataclasses and datetimes itself (ISO 8601, read back by ``_instant``)
    light = {f.name: getattr(summary, f.name) for f in fields(summary)
             if f.name not in ("cohort_source", "workload_source")}
    return (orjson.dumps(light), orjson.dumps(summary.cohorts), orjson.dumps(summary.workloads),
            orjson.dumps(counts_in(summary)))


# --- reading back ----------------------------------------------------------------------------------


def _decoded(stored: bytes, cohorts: Callable[[], list[CohortSummary]], workloads: Callable[[], list[Entry]],
             now: datetime) -> OperationFacts:
    body = orjson.loads(stored)
    return OperationFacts(**{**body, "gpus": [GpuShare(**g) for g in body["gpus"]],
                             "scores": [ScoreShare(**s) for s in body["scores"]],
                             "attainable": rates_from_json(body["attainable"]),
                             "newest": [_cohort(c, now) for c in body["newest"]], "cohort_source": cohorts,
                             "workload_source": workloads})


def _cohort(body: dict[str, Any], now: datetime) -> CohortSummary:
    # ``body`` was parsed for this call alone: its fields are replaced in place, and the run a cohort's
    # leader and its record events name is built once (they are the same run).
    refs: dict[tuple[str, int | None], RunRef] = {}
    body["leader"], body["second"] = _ref(body["leader"], now, refs), _ref(body["second"], now, refs)
    body["events"] = [EventView(_instant(e["at"]), e["kind"], _ref(e["holder"], now, refs),
                                _ref(e["previous"], now, refs), e["median_ns"], e["margin"]) for e in body["events"]]
    body["last_observed"] = _instant(body["last_observed"])
    return CohortSummary(**body)


def _ref(body: dict[str, Any] | None, now: datetime, refs: dict[tuple[str, int | None], RunRef]) -> RunRef | None:
    # Keyed by run and figure: a cohort's leader shows its row's figure (its replicates' median), the record
    # events the run's own.
    if body is None:
        return None
    if (known := refs.get((body["run_id"], body["median_ns"]))) is None:
        observed = body["observed_at"] = datetime.fromisoformat(body["observed_at"])
        body["stale"] = is_stale(observed, now)
        known = refs[(body["run_id"], body["median_ns"])] = RunRef(**body)
    return known


def _instant(text: str | None) -> Any:
    return datetime.fromisoformat(text) if text is not None else None


def verified_events(events: list[EventView]) -> list[EventView]:
    """The record events whose new holder is a verified run (the evidence rule stays in ``policy/evidence``)."""
    return [e for e in events if e.holder and e.holder.evidence in VERIFIED_LEVELS]
