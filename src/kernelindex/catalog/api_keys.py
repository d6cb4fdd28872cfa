"""Storage of API keys (trust/api_keys.py decides what they are and checks them)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import insert, select, update

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import ApiKeyRow


def insert_key(catalog: Catalog, row: dict[str, Any]) -> None:
    with catalog.engine.begin() as conn:
        conn.execute(insert(ApiKeyRow), [row])


def key_rows(catalog: Catalog) -> list[ApiKeyRow]:
    with catalog.session() as session:
        return list(session.scalars(select(ApiKeyRow).order_by(ApiKeyRow.created_at, ApiKeyRow.key_id)))


def key_row(catalog: Catalog, key_id: str) -> ApiKeyRow | None:
    with catalog.session() as session:
        return session.get(ApiKeyRow, key_id)


def mark_revoked(catalog: Catalog, key_id: str, *, revoked_by: str) -> int:
    """Revoke an active key; returns how many rows changed (0: unknown or already revoked)."""
    with catalog.engine.begin() as conn:
        return conn.execute(
            update(ApiKeyRow).where(ApiKeyRow.key_id == key_id, ApiKeyRow.revoked_at.is_(None))
            .values(revoked_at=datetime.now(UTC), revoked_by=revoked_by)
        ).rowcount
