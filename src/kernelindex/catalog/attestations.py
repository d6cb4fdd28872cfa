"""What uploads need to know from storage: whether a bundle was already published (its runs carry
attestations naming it), and which database errors mean "a concurrent writer got there first"."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError, OperationalError

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import AttestationRow

# A concurrent publication inserted the same shared rows (IntegrityError), or SQLite's writer lock
# timed out (OperationalError): the publication rolled back and may be retried.
WRITE_CONFLICTS: tuple[type[Exception], ...] = (IntegrityError, OperationalError)


def bundle_attested(catalog: Catalog, bundle_digest: str) -> bool:
    with catalog.engine.connect() as conn:
        return conn.execute(select(AttestationRow.run).where(AttestationRow.bundle_digest == bundle_digest)
                            .limit(1)).first() is not None
