"""The records ledger (/records): cohorts with their current holder, history and margin.
Cohorts are never ranked against each other: the ledger is ordered by operation and workload
(current), by the time of the last change (recently broken) or by event time (history)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from kernelindex import registry, urls
from kernelindex.catalog.db import Catalog
from kernelindex.readmodel.cohort_aliases import current_cohort_key
from kernelindex.readmodel.errors import CohortMoved
from kernelindex.readmodel.jsonable import JsonModel, to_jsonable
from kernelindex.readmodel.ledger_views import VIEWS
from kernelindex.readmodel.pages_common import (
    CohortSummary,
    EventView,
    NotFound,
    check_choice,
)
from kernelindex.readmodel.summaries import EVIDENCE_LEVELS, OperationFacts, operation_summaries

HISTORY_LIMIT = 300


@dataclass
class LedgerEvent(JsonModel):
    operation: str
    operation_title: str
    cohort: str
    cohort_label: str
    workload_label: str
    event: EventView
    url: str


@dataclass
class RecordsPage(JsonModel):
    view: str
    filters: dict[str, str | None]
    options: dict[str, list[dict[str, str]]]
    cohorts: list[CohortSummary] = field(default_factory=list)
    events: list[LedgerEvent] = field(default_factory=list)
    events_truncated: bool = False
    cohort: CohortSummary | None = None
    total_cohorts: int = 0
    gpu_reading: str | None = None  # how a GPU name that more than one product answers was read

    _plain = False  # it writes its own JSON: each cohort's is kept with its operation's summary

    def to_json(self) -> dict[str, Any]:
        written: dict[int, dict[str, Any]] = self.__dict__.get("_written", {})
        data = {name: to_jsonable(getattr(self, name)) for name in _FIELDS if name != "cohorts"}
        data["cohorts"] = [written.get(id(c)) or to_jsonable(c) for c in self.cohorts]
        return {name: data[name] for name in _FIELDS}


_FIELDS = tuple(f.name for f in fields(RecordsPage))


def records_page(catalog: Catalog, *, operation: str | None = None, gpu: str | None = None,
                 evidence: str | None = None, view: str | None = None, cohort: str | None = None,
                 now: datetime) -> RecordsPage:
    clock = now
    every = operation_summaries(catalog, now=now)
    summaries = [s for facts in every for s in facts.cohorts_with_leader()]
    options = _options(summaries)
    reading = registry.gpu_reading(gpu) if gpu else None
    gpu = registry.gpu_slug(gpu) or gpu if gpu else gpu
    check_choice("operation", operation, [o["value"] for o in options["operation"]])
    check_choice("gpu", gpu, [o["value"] for o in options["gpu"]] + _answered_gpus(options))
    check_choice("evidence", evidence, list(EVIDENCE_LEVELS))
    view = check_choice("view", view, VIEWS) or "current"
    filters = {"operation": operation, "gpu": gpu, "evidence": evidence, "view": view, "cohort": cohort}
    page = RecordsPage(view=view, filters=filters, options=options, total_cohorts=len(summaries), gpu_reading=reading)
    if cohort is not None:
        page.cohort = _cohort(catalog, summaries, cohort)
        return page
    chosen = [s for s in summaries if _matches(s, operation, gpu, evidence)]
    page.__dict__["_written"] = {k: v for facts in every for k, v in _written(facts).items()}
    if view == "current":
        page.cohorts = chosen
    elif view == "recently-broken":
        broken = [s for s in chosen if any(e.kind != "first" for e in s.events)]
        page.cohorts = sorted(broken, key=lambda s: (s.last_event.at if s.last_event else clock), reverse=True)
    else:
        page.events, page.events_truncated = _history(chosen)
    return page


def _cohort(catalog: Catalog, summaries: list[CohortSummary], key: str) -> CohortSummary:
    """The cohort ``?cohort=`` names; a key an earlier rule gave a cohort holding a record moves to its key now
    (CohortMoved: the web answers a 301, as the operation page does)."""
    found = next((s for s in summaries if key in (s.key, s.cohort_key)), None)
    if found is not None:
        return found
    moved = current_cohort_key(catalog, key)
    if moved is not None and any(s.key == moved for s in summaries):
        raise CohortMoved(key, moved)
    raise NotFound(f"no cohort {key!r} holds a record; cohort keys are the 12 hex digits in ?cohort=")


def _written(facts: OperationFacts) -> dict[int, dict[str, Any]]:
    """The JSON of the operation's cohorts with a leader, by object: written once per version of the
    operation (and day), so the ledger of ~60,000 cohorts writes only the changed operations' again."""
    return facts.derived("records-json", lambda: {id(c): c.to_json() for c in facts.cohorts_with_leader()})


def _matches(s: CohortSummary, operation: str | None, gpu: str | None, evidence: str | None) -> bool:
    return ((operation is None or s.operation == operation) and (gpu is None or registry.gpu_may_be(gpu, s.gpu))
            and (evidence is None or (s.leader is not None and s.leader.evidence == evidence)))


def _history(chosen: list[CohortSummary]) -> tuple[list[LedgerEvent], bool]:
    events = [
        LedgerEvent(s.operation, s.operation_title, s.key, s.label, s.workload_label, e,
                    urls.records(("cohort", s.key)))
        for s in chosen for e in s.events
    ]
    events.sort(key=lambda le: (le.event.at, le.operation, le.cohort), reverse=True)
    return events[:HISTORY_LIMIT], len(events) > HISTORY_LIMIT


def _answered_gpus(options: dict[str, list[dict[str, str]]]) -> list[str]:
    """GPUs with no records of their own whose request the listed GPUs answer (``gpu_may_be``)."""
    listed = [o["value"] for o in options["gpu"]]
    return [g for g in registry.gpus() if any(registry.gpu_may_be(g, seen) for seen in listed)]


def _options(summaries: list[CohortSummary]) -> dict[str, list[dict[str, str]]]:
    ops = sorted({(s.operation, s.operation_title) for s in summaries})
    gpus = sorted({s.gpu for s in summaries if s.gpu})
    names = registry.gpus()
    return {
        "operation": [{"value": slug, "label": title} for slug, title in ops],
        "gpu": [{"value": g, "label": names[g].name if g in names else g} for g in gpus],
        "evidence": [{"value": level, "label": level} for level in EVIDENCE_LEVELS],
        "view": [{"value": v, "label": v.replace("-", " ")} for v in VIEWS],
    }
