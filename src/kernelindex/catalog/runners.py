"""The runner keys the catalog trusts (TrustedRunner facts): the one query, for the read path
(evidence levels) and the write path (bundle publication, runners' claims) alike."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Connection, delete, select

from kernelindex.catalog.changes import record_changes
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import TrustedRunnerRow
from kernelindex.catalog.publish import PublishReport, _publishing, _record_publication


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


def untrust_runner(catalog: Catalog, key_id: str, *, actor: str, reason: str) -> str | None:
    """Stop trusting ``key_id`` (``ki runner untrust``): its bundles and claims are refused from now on, and
    its runs are no longer derived ``verified`` (their attestations stay: the signature was checked). The
    TrustedRunner manifest stays in the catalog as history; the act is a publication (the catalog version
    moves, every operation is recorded as changed) whose locator names the key and the reason. Returns the
    name the key was trusted under, or None when it was not trusted (nothing written). ``ki runner trust``
    trusts it again."""
    now = datetime.now(UTC)
    with _publishing(catalog) as conn:
        name = conn.execute(select(TrustedRunnerRow.name).where(TrustedRunnerRow.key_id == key_id)).scalar()
        if name is None:
            return None
        conn.execute(delete(TrustedRunnerRow).where(TrustedRunnerRow.key_id == key_id))
        _record_publication(conn, PublishReport(), "ki runner untrust", None,
                            f"untrusted {key_id} ({name}): {reason}"[:2000], actor, now)
        record_changes(conn, None)  # every operation: evidence levels and attainable floors may change
    return str(name)
