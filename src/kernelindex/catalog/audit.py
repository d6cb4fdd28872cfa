"""The append-only audit log of every write: who, with which scope, did what to which object, from
where, and how it ended. Rows are only inserted, but for the aggregate of failed authentications (one
row per source and minute, its count updated during that minute: web/api/auth.py). It is not catalog
data: writing it never changes the catalog version, so an idempotent replay leaves the catalog (and
every cache) as it was."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import insert, select, update

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import AuditRow
from kernelindex.domain.instants import as_utc

ANONYMOUS = "anonymous"


@dataclass(frozen=True)
class AuditEntry:
    id: int
    at: datetime
    actor: str
    api_key: str | None
    scope: str | None
    action: str
    object_digest: str | None
    client: str | None
    outcome: str
    detail: dict[str, Any] | None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "at": self.at.isoformat(), "actor": self.actor, "api_key": self.api_key,
                "scope": self.scope, "action": self.action, "object_digest": self.object_digest,
                "client": self.client, "outcome": self.outcome, "detail": self.detail}


def record(
    catalog: Catalog, *, actor: str, action: str, outcome: str, api_key: str | None = None,
    scope: str | None = None, object_digest: str | None = None, client: str | None = None,
    detail: dict[str, Any] | None = None, at: datetime | None = None,
) -> int:
    """Append an entry; returns its id."""
    row = {"at": at or datetime.now(UTC), "actor": actor[:200], "api_key": api_key, "scope": scope, "action": action,
           "object_digest": object_digest, "client": (client or "")[:100] or None, "outcome": outcome,
           "detail": json.dumps(detail, sort_keys=True, default=str) if detail else None}
    with catalog.engine.begin() as conn:
        return int(conn.execute(insert(AuditRow).values(**row).returning(AuditRow.id)).scalar_one())


def update_detail(catalog: Catalog, entry: int, detail: dict[str, Any]) -> None:
    """Rewrite the detail of an aggregate entry (failed authentications: one entry per source and minute,
    whose count grows during that minute). No other entry is ever changed."""
    with catalog.engine.begin() as conn:
        conn.execute(update(AuditRow).where(AuditRow.id == entry).values(detail=json.dumps(detail, sort_keys=True)))


def accepted_since(catalog: Catalog, *, actor: str, action: str, client: str, since: datetime) -> list[datetime]:
    """When ``actor`` from ``client`` last did ``action`` without being refused, after ``since``,
    oldest first. The log is shared by every server process, so a limit counted here holds for all."""
    query = (select(AuditRow.at).where(AuditRow.actor == actor, AuditRow.action == action,
                                       AuditRow.client == client[:100], AuditRow.at > since,
                                       ~AuditRow.outcome.startswith("refused"))
             .order_by(AuditRow.at))
    with catalog.session() as session:
        return [as_utc(at) or at for at in session.scalars(query)]


def accepted_for_key_since(catalog: Catalog, *, api_key: str, action: str, since: datetime) -> list[datetime]:
    """When the API key ``api_key`` last did ``action`` without being refused, after ``since``, oldest first."""
    query = (select(AuditRow.at).where(AuditRow.api_key == api_key, AuditRow.action == action, AuditRow.at > since,
                                       ~AuditRow.outcome.startswith("refused"))
             .order_by(AuditRow.at))
    with catalog.session() as session:
        return [as_utc(at) or at for at in session.scalars(query)]


def entries(catalog: Catalog, *, after: int = 0, limit: int = 100, action: str | None = None) -> list[AuditEntry]:
    """Entries with an id above ``after``, oldest first."""
    query = select(AuditRow).where(AuditRow.id > after).order_by(AuditRow.id).limit(limit)
    if action:
        query = query.where(AuditRow.action == action)
    with catalog.session() as session:
        return [
            AuditEntry(r.id, as_utc(r.at) or r.at, r.actor, r.api_key, r.scope, r.action, r.object_digest, r.client,
                       r.outcome, json.loads(r.detail) if r.detail else None)
            for r in session.scalars(query)
        ]
