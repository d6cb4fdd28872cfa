"""What the runners' claims and completions read and write besides the replica rows: the nonces of
accepted signed claims (each accepted once), and the runs an uploaded bundle brought."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, insert, select
from sqlalchemy.exc import IntegrityError

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import AttestationRow, ClaimNonceRow, ObjectRow, RunRow
from kernelindex.domain.instants import as_utc


def spend_nonce(catalog: Catalog, key_id: str, nonce: str, at: datetime, *, forget_before: datetime) -> bool:
    """Record that ``key_id`` used ``nonce``; False when it already had. Nonces older than
    ``forget_before`` are dropped (a claim that old is refused by its time anyway)."""
    try:
        with catalog.engine.begin() as conn:
            conn.execute(delete(ClaimNonceRow).where(ClaimNonceRow.at < forget_before))
            conn.execute(insert(ClaimNonceRow).values(key_id=key_id, nonce=nonce, at=at))
    except IntegrityError:
        return False
    return True


@dataclass(frozen=True)
class BundleRun:
    """A run an uploaded bundle brought, as a completion checks it."""

    run_id: str
    operation: str
    workload: str
    gpu_product: str | None
    observed_at: datetime
    published_at: datetime


def bundle_runs(catalog: Catalog, bundle_digest: str, key_id: str) -> list[BundleRun]:
    """The runs attested from ``bundle_digest`` signed by ``key_id``, with their GPU product."""
    query = (select(RunRow.run_id, RunRow.operation, RunRow.workload, RunRow.observed_at, RunRow.published_at,
                    ObjectRow.body)
             .join(AttestationRow, AttestationRow.run == RunRow.digest)
             .join(ObjectRow, ObjectRow.digest == RunRow.environment)
             .where(AttestationRow.bundle_digest == bundle_digest, AttestationRow.key_id == key_id))
    with catalog.engine.connect() as conn:
        rows = conn.execute(query).all()
    return [BundleRun(r.run_id, r.operation, r.workload, _product(r.body), as_utc(r.observed_at) or r.observed_at,
                      as_utc(r.published_at) or r.published_at) for r in rows]


def _product(environment_body: str) -> str | None:
    product = json.loads(environment_body).get("spec", {}).get("hardware", {}).get("product")
    return product if isinstance(product, str) else None
