"""What changed in the index, oldest first, for followers (``/api/v1/changes``, ``/feed.atom``, and the
agents' ``list_changes`` tool): publications, record events, retractions and request completions.

``list_changes(catalog, since=cursor)`` returns the changes after the cursor and the cursor to pass
next time. A cursor is an opaque token naming the last change seen (its time, kind and id); an
RFC 3339 instant is accepted too ("everything after this time").
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from sqlalchemy import select

from kernelindex import urls
from kernelindex.catalog import requests as stored
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import PublicationRow, RetractionRow
from kernelindex.catalog.publish import run_id_of
from kernelindex.domain.instants import as_utc
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.operation_summary import OperationFacts
from kernelindex.readmodel.summaries import operation_summaries

KINDS = ("publication", "record", "retraction", "request_completed")
MAX_CHANGES = 500


class BadCursor(ValueError):
    pass


@dataclass
class Change(JsonModel):
    at: datetime
    kind: str  # publication | record | retraction | request_completed
    id: str  # unique within its kind
    title: str
    summary: str
    url: str
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def position(self) -> tuple[str, str, str]:
        return (self.at.isoformat(), self.kind, self.id)


@dataclass
class ChangesPage(JsonModel):
    changes: list[Change]
    next_cursor: str | None  # pass as ?since= to get what follows; None when nothing was returned
    more: bool  # more changes follow beyond this page's limit


def encode_cursor(change: Change) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(change.position)).encode()).decode().rstrip("=")


def _position(since: str | None) -> tuple[str, str, str] | None:
    if not since:
        return None
    try:
        instant = datetime.fromisoformat(since.replace("Z", "+00:00"))
        return ((instant if instant.tzinfo else instant.replace(tzinfo=UTC)).astimezone(UTC).isoformat(), "~", "~")
    except ValueError:
        pass
    try:
        at, kind, ident = json.loads(base64.urlsafe_b64decode(since + "=" * (-len(since) % 4)))
        datetime.fromisoformat(at)
        if kind not in KINDS or not isinstance(ident, str):
            raise ValueError(kind)
    except (ValueError, TypeError, json.JSONDecodeError):
        raise BadCursor(f"since={since[:40]!r} is neither a cursor from next_cursor nor an RFC 3339 instant") from None
    return (at, kind, ident)


def list_changes(catalog: Catalog, *, now: datetime, since: str | None = None, limit: int = 100) -> ChangesPage:
    """Changes after ``since`` (a cursor or an instant), oldest first, at most ``limit``; ``now`` is the
    clock of the pages (record events depend on staleness)."""
    after = _position(since)
    everything = sorted(all_changes(catalog, now), key=lambda c: c.position)
    fresh = [c for c in everything if after is None or c.position > after]
    page = fresh[: max(1, min(limit, MAX_CHANGES))]
    cursor = encode_cursor(page[-1]) if page else since
    return ChangesPage(page, cursor, len(fresh) > len(page))


def all_changes(catalog: Catalog, now: datetime) -> list[Change]:
    return [*_publications(catalog, now), *_retractions(catalog, now), *_records(catalog, now),
            *_completions(catalog)]


def _publications(catalog: Catalog, now: datetime) -> list[Change]:
    with catalog.engine.connect() as conn:
        rows = conn.execute(select(PublicationRow).order_by(PublicationRow.id)).all()
    changes = []
    for row in rows:
        counts = json.loads(row.counts)
        new = counts.get("new", {})
        runs = new.get("BenchmarkRun", 0)
        what = _count(runs, "new run") if runs else _count(sum(new.values()), "new object")
        changes.append(Change(as_utc(row.at) or now, "publication", str(row.id),
                              f"Published from {row.source}: {what}", f"{row.source} by {row.actor}: "
                              + (", ".join(f"{v} {k}" for k, v in sorted(new.items())) or "no new objects"),
                              urls.records(("view", "history")), {"source": row.source, "actor": row.actor,
                                                        "snapshot": row.snapshot_digest, "counts": counts}))
    return changes


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _retractions(catalog: Catalog, now: datetime) -> list[Change]:
    with catalog.engine.connect() as conn:
        rows = conn.execute(select(RetractionRow)).all()
    return [Change(as_utc(r.at) or now, "retraction", r.digest, f"Run {run_id_of(r.run)} retracted",
                   f"By {r.actor}: {r.reason}", urls.run(run_id_of(r.run)),
                   {"run": run_id_of(r.run), "reason": r.reason})
            for r in rows]


def _records(catalog: Catalog, now: datetime) -> list[Change]:
    return [change for facts in operation_summaries(catalog, now=now) for change in _operation_records(facts)]


def _operation_records(facts: OperationFacts) -> list[Change]:
    """The record events of one operation's cohorts, as changes."""
    changes = []
    for summary in facts.cohorts:
        for event in summary.events:
            holder = event.holder.run_id if event.holder else "none"
            title = {"first": "First record", "beaten": "Record broken", "retraction": "Record changed by a "
                     "retraction"}.get(event.kind, event.kind)
            changes.append(Change(event.at, "record", f"{summary.cohort_key}:{holder}:{event.kind}",
                                  f"{title}: {summary.operation_title}, {summary.workload_label}",
                                  f"{summary.label}: {event.holder.implementation if event.holder else 'no holder'}"
                                  f"{f', {event.margin:.2f}× over the previous holder' if event.margin else ''}",
                                  urls.records(("cohort", summary.key)),
                                  {"operation": summary.operation, "cohort": summary.key, "run": holder,
                                   "median_ns": event.median_ns, "margin": event.margin}))
    return changes


def _completions(catalog: Catalog) -> list[Change]:
    changes = []
    for request, replica in stored.completions(catalog):
        verb = "measured" if replica.state == stored.DONE else "failed"
        axes = " ".join(f"{k}={v}" for k, v in request.spec["axes"].items())
        changes.append(Change(replica.finished_at or request.updated_at, "request_completed",
                              f"{request.id}:{replica.replica}",
                              f"Request {request.id} {verb}: {request.operation} {axes} on {request.gpu}",
                              f"replica {replica.replica} by {replica.runner}"
                              + (f": {replica.failure}" if replica.failure else ""),
                              urls.api(urls.measurement_request(request.id)),
                              {"request": request.id, "replica": replica.replica, "state": replica.state,
                               "runner": replica.runner, "bundle": replica.bundle_digest}))
    return changes


FEED_SIZE = 50


def latest_changes(catalog: Catalog, count: int, *, now: datetime) -> list[Change]:
    """The newest ``count`` changes, newest first (the Atom feed). The record events come from each operation's
    own newest ``count``, kept with its summary (``OperationFacts.derived``): after a publication only the changed
    operations' events are listed and sorted again, not the ~70,000 of every cohort (issue 50)."""
    records = [change for facts in operation_summaries(catalog, now=now)
               for change in facts.derived(("feed-records", count), partial(_newest_records, facts, count))]
    everything = [*_publications(catalog, now), *_retractions(catalog, now), *records, *_completions(catalog)]
    return _newest(everything, count)


def _newest_records(facts: OperationFacts, count: int) -> list[Change]:
    return _newest(_operation_records(facts), count)


def _newest(changes: list[Change], count: int) -> list[Change]:
    return sorted(changes, key=lambda c: c.position, reverse=True)[:count]
