"""Site-wide answers computed once per catalog version for every worker (issue 50).

After a publication every site-wide answer (home, records, challenges, feed, GPU pages, search, indexes) is out
of date in every worker of ``ki serve``. Each worker used to compute each of them again; here the first worker
to compute one at a stamp claims it (a row with no answer yet), stores the finished answer in the row, and the
others read it instead of computing it. A claim older than the claimer's allowance (it died, or is stuck) may be
taken over. Rows of an older catalog version can no longer be asked for and are dropped by the next store.

The table holds finished answers only (the answer cache, ``web/answer_cache.py`` with its sharing steps in
``web/shared_site_answers.py``, is its one reader and writer): it is the
rendered answer's place, shared, not a third place an answer lives (docs/caching.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import Connection, delete, insert, select, tuple_, update
from sqlalchemy.exc import IntegrityError

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import SharedAnswerRow

Place = tuple[str, str]  # (key, stamp): digests of the answer's cache key and of its shareable stamp


@dataclass(frozen=True)
class Stored:
    """A finished answer as stored: its status, headers (lower-case names), body and ETag."""

    status: int
    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes
    etag: bytes


@dataclass(frozen=True)
class Claimed:
    """No answer yet: ``mine`` when this call claimed it (compute it, then ``store``), else held by another
    worker since ``at`` (``time.time()``)."""

    mine: bool
    at: float


def obtain(catalog: Catalog, place: Place, version: int, *, stale_after_s: float) -> Stored | Claimed:
    """The stored answer at ``place``, else a claim on computing it: this call's when nobody holds one, or
    when the holder's claim is older than ``stale_after_s``."""
    key, stamp = place
    now = time.time()
    with catalog.engine.connect() as conn:
        found = conn.execute(select(SharedAnswerRow.claimed_at, SharedAnswerRow.headers, SharedAnswerRow.body)
                             .where(SharedAnswerRow.key == key, SharedAnswerRow.stamp == stamp)).first()
        conn.rollback()
    if found is not None and found.body is not None:
        return _stored(found.headers, found.body)
    try:
        with catalog.engine.begin() as conn:
            if found is None:
                conn.execute(insert(SharedAnswerRow).values(key=key, stamp=stamp, version=version, claimed_at=now))
                return Claimed(True, now)
            if now - found.claimed_at < stale_after_s:
                return Claimed(False, found.claimed_at)
            taken = conn.execute(update(SharedAnswerRow).where(
                SharedAnswerRow.key == key, SharedAnswerRow.stamp == stamp, SharedAnswerRow.body.is_(None),
                SharedAnswerRow.claimed_at == found.claimed_at).values(claimed_at=now)).rowcount
            return Claimed(taken == 1, now if taken == 1 else found.claimed_at)
    except IntegrityError:  # another worker claimed it between the read and the insert
        return Claimed(False, now)


def answered(catalog: Catalog, places: list[Place]) -> dict[Place, Stored | float]:
    """Of these places, those with a row: the stored answer, or the time the pending claim was made."""
    if not places:
        return {}
    with catalog.engine.connect() as conn:
        rows = conn.execute(select(SharedAnswerRow.key, SharedAnswerRow.stamp, SharedAnswerRow.claimed_at,
                                   SharedAnswerRow.headers, SharedAnswerRow.body)
                            .where(tuple_(SharedAnswerRow.key, SharedAnswerRow.stamp).in_(places))).all()
        conn.rollback()
    return {(r.key, r.stamp): _stored(r.headers, r.body) if r.body is not None else r.claimed_at for r in rows}


def store(catalog: Catalog, place: Place, version: int, answer: Stored) -> None:
    """Keep the finished answer at ``place`` for every worker, and drop the rows of older catalog versions."""
    key, stamp = place
    headers = orjson.dumps({"status": answer.status, "etag": answer.etag.decode("latin-1"),
                            "headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in answer.headers]})
    values = {"headers": headers.decode(), "body": answer.body}
    with catalog.engine.begin() as conn:
        written = conn.execute(update(SharedAnswerRow).where(SharedAnswerRow.key == key, SharedAnswerRow.stamp == stamp)
                               .values(**values)).rowcount
        if not written:
            conn.execute(insert(SharedAnswerRow).values(key=key, stamp=stamp, version=version, claimed_at=time.time(),
                                                        **values))
        _drop_older(conn, version)


def release(catalog: Catalog, place: Place) -> None:
    """Give up a claim whose computation kept nothing (an error page, an answer that may not be kept)."""
    key, stamp = place
    with catalog.engine.begin() as conn:
        conn.execute(delete(SharedAnswerRow).where(SharedAnswerRow.key == key, SharedAnswerRow.stamp == stamp,
                                                   SharedAnswerRow.body.is_(None)))


def claim_once(catalog: Catalog, place: Place, version: int) -> bool:
    """Whether this call is the first of all workers to claim ``place`` (a task done once per catalog version
    for them all, such as warming the read models after a publication); the claim is never answered."""
    try:
        with catalog.engine.begin() as conn:
            conn.execute(insert(SharedAnswerRow).values(key=place[0], stamp=place[1], version=version,
                                                        claimed_at=time.time()))
    except IntegrityError:
        return False
    return True


def _drop_older(conn: Connection, version: int) -> None:
    conn.execute(delete(SharedAnswerRow).where(SharedAnswerRow.version < version))


def _stored(headers: str, body: Any) -> Stored:
    meta = orjson.loads(headers)
    return Stored(meta["status"], tuple((k.encode("latin-1"), v.encode("latin-1")) for k, v in meta["headers"]),
                  bytes(body), meta["etag"].encode("latin-1"))
