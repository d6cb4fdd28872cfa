"""The runner keys the catalog trusts (TrustedRunner facts): the one query, for the read path
(evidence levels) and the write path (bundle publication, runners' claims) alike."""

from __future__ import annotations

from sqlalchemy import Connection, select

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import TrustedRunnerRow


def trusted_keys(conn: Connection) -> dict[str, str]:
    """key id → the runner name it is trusted under."""
    return dict(conn.execute(select(TrustedRunnerRow.key_id, TrustedRunnerRow.name)).tuples().all())


def trusted_runner_keys(catalog: Catalog) -> dict[str, str]:
    with catalog.engine.connect() as conn:
        return trusted_keys(conn)


def trusted_runner(catalog: Catalog, key_id: str) -> tuple[str, str] | None:
    """(name, public key) the catalog trusts ``key_id`` under, or None."""
    with catalog.engine.connect() as conn:
        row = conn.execute(select(TrustedRunnerRow.name, TrustedRunnerRow.public_key)
                           .where(TrustedRunnerRow.key_id == key_id)).first()
    return (row.name, row.public_key) if row else None
