"""What uploads need to know from storage: whether a bundle was already published (its runs carry
attestations naming it)."""

from __future__ import annotations

from sqlalchemy import select

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import AttestationRow


def bundle_attested(catalog: Catalog, bundle_digest: str) -> bool:
    with catalog.engine.connect() as conn:
        return conn.execute(select(AttestationRow.run).where(AttestationRow.bundle_digest == bundle_digest)
                            .limit(1)).first() is not None
