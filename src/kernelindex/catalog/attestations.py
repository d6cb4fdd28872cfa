"""Which bundles the catalog already published (their runs carry attestations naming them): an
upload's replay check, start-up's shipped bundles."""

from __future__ import annotations

from sqlalchemy import select

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import AttestationRow


def bundle_attested(catalog: Catalog, bundle_digest: str) -> bool:
    with catalog.engine.connect() as conn:
        return conn.execute(select(AttestationRow.run).where(AttestationRow.bundle_digest == bundle_digest)
                            .limit(1)).first() is not None


def attested_bundles(catalog: Catalog) -> set[str]:
    """Digests of the bundles whose runs the catalog holds as attested."""
    with catalog.engine.connect() as conn:
        return set(conn.execute(select(AttestationRow.bundle_digest).distinct()).scalars())

