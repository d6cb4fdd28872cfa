"""Per source name: its runs, how many of them it reported itself (no runner key signed them), its newest
observation and its newest publication — what the home page's sources block shows (``readmodel/pages_home.py``).

Counted on a read, these are two scans of the runs table (~350 ms on the full catalog), and every worker counted
them again after every publication. Runs and publications are only ever inserted, each by the publication
transaction, so that transaction adds what it inserted to the stored tallies and a read is one small select.
The newest instants are compared as the database compares them: each comes back from the database through the
column type the tally is stored with (SQLite compares the stored text, PostgreSQL the instant), so a kept
tally is exactly what counting again gives. ``counted_tallies`` is that count (the tests' check)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime

from sqlalchemy import Connection, case, func, insert, select, update

from kernelindex.catalog.models import PublicationRow, RunRow, SourceTallyRow

CHUNK = 500
_UNSIGNED = case((RunRow.runner_key_id.is_(None), 1), else_=0)


@dataclass(frozen=True)
class SourceTally:
    runs: int = 0
    reported_runs: int = 0
    last_observed: datetime | None = None
    last_published: datetime | None = None

    def add(self, other: SourceTally) -> SourceTally:
        return SourceTally(self.runs + other.runs, self.reported_runs + other.reported_runs,
                           _later(self.last_observed, other.last_observed),
                           _later(self.last_published, other.last_published))


def stored_tallies(conn: Connection, names: Sequence[str] | None = None) -> dict[str, SourceTally]:
    """Every source name's tally as the publications kept it (of ``names`` only, when given)."""
    query = select(SourceTallyRow)
    chunks = [query] if names is None else [query.where(SourceTallyRow.source.in_(names[start:start + CHUNK]))
                                             for start in range(0, len(names), CHUNK)]
    return {row.source: SourceTally(row.runs, row.reported_runs, row.last_observed, row.last_published)
            for chunk in chunks for row in conn.execute(chunk)}


def counted_tallies(conn: Connection) -> dict[str, SourceTally]:
    """Every source name's tally counted from the runs and publications tables (each row read)."""
    tallies = {name: SourceTally(runs, int(reported), last) for name, runs, reported, last in conn.execute(
        select(RunRow.source, func.count(), func.sum(_UNSIGNED), func.max(RunRow.observed_at))
        .group_by(RunRow.source))}
    for name, at in conn.execute(select(PublicationRow.source, func.max(PublicationRow.at))
                                 .group_by(PublicationRow.source)):
        tallies[name] = tallies.get(name, SourceTally()).add(SourceTally(last_published=at))
    return tallies


def add_runs(conn: Connection, digests: Sequence[str]) -> None:
    """Add these runs, inserted by this transaction, to their sources' tallies."""
    added: dict[str, SourceTally] = {}
    for start in range(0, len(digests), CHUNK):
        for name, runs, reported, last in conn.execute(
                select(RunRow.source, func.count(), func.sum(_UNSIGNED), func.max(RunRow.observed_at))
                .where(RunRow.digest.in_(digests[start:start + CHUNK])).group_by(RunRow.source)):
            added[name] = added.get(name, SourceTally()).add(SourceTally(runs, int(reported), last))
    _keep(conn, added)


def add_publication(conn: Connection, publication: int) -> None:
    """Add this publication, inserted by this transaction (its id), to its source's tally."""
    name, at = conn.execute(select(PublicationRow.source, PublicationRow.at)
                            .where(PublicationRow.id == publication)).one()
    _keep(conn, {name: SourceTally(last_published=at)})


def _keep(conn: Connection, added: Mapping[str, SourceTally]) -> None:
    names = sorted(added)
    kept = stored_tallies(conn, names)
    for name in names:
        if name in kept:
            conn.execute(update(SourceTallyRow).where(SourceTallyRow.source == name)
                         .values(**asdict(kept[name].add(added[name]))))
        else:
            conn.execute(insert(SourceTallyRow).values(source=name, **asdict(added[name])))


def _later(one: datetime | None, other: datetime | None) -> datetime | None:
    if one is None or other is None:
        return other if one is None else one
    return max(one, other)
