"""What the catalog already holds, as a writer asks before writing: start-up's imports (any runs of a
source yet?), its shipped supersessions (recorded already? both runs present?)."""

from __future__ import annotations

from sqlalchemy import func, select

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import RunRow, SupersessionRow


def has_runs(catalog: Catalog, source: str | None = None) -> bool:
    """Whether the catalog holds any run (from ``source``, when given)."""
    query = select(func.count()).select_from(RunRow)
    if source:
        query = query.where(RunRow.source == source)
    with catalog.engine.connect() as conn:
        return conn.execute(query).scalar_one() > 0


def supersession_digests(catalog: Catalog) -> set[str]:
    """Digests of the Supersession facts the catalog records."""
    with catalog.engine.connect() as conn:
        return set(conn.execute(select(SupersessionRow.digest)).scalars())


def runs_present(catalog: Catalog, digests: set[str]) -> set[str]:
    """Which of these run digests the catalog holds."""
    found: set[str] = set()
    wanted = sorted(digests)
    with catalog.engine.connect() as conn:
        for start in range(0, len(wanted), 500):
            found.update(conn.execute(select(RunRow.digest).where(RunRow.digest.in_(wanted[start:start + 500])))
                         .scalars())
    return found
