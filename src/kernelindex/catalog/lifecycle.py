"""Corrections are appended facts, never edits: retractions and supersessions; and a curator's approval of an
install line a runner's bundle proposed."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import insert, or_, select, update

from kernelindex.catalog.changes import record_changes
from kernelindex.catalog.curation import APPROVED, HELD, latest_acts
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import CatalogStateRow, InstallReviewRow, RunRow
from kernelindex.catalog.publish import _publishing, publish_manifests
from kernelindex.domain.manifests import build, digest_of


class UnknownRunError(LookupError):
    pass


def resolve_run_digest(catalog: Catalog, run_ref: str) -> str:
    """Accept a full digest, 'sha256:'-less hex, or the 16-hex run id (or a unique prefix of ≥ 8)."""
    ref = run_ref.strip().lower().removeprefix("sha256:")
    if len(ref) < 8 or any(c not in "0123456789abcdef" for c in ref):
        raise UnknownRunError(f"{run_ref!r} is not a run id (16 hex digits) or a sha256 digest")
    with catalog.engine.connect() as conn:
        found = (
            conn.execute(
                select(RunRow.digest)
                .where(or_(RunRow.run_id == ref[:16], RunRow.digest.like(f"sha256:{ref}%")))
                .limit(2)
            )
            .scalars()
            .all()
        )
    if len(found) != 1:
        problem = "matches several runs; give more digits" if found else "matches no run in the catalog"
        raise UnknownRunError(f"run {run_ref!r} {problem}")
    return found[0]


def retract(catalog: Catalog, run_ref: str, *, reason: str, actor: str, at: datetime | None = None) -> str:
    run = resolve_run_digest(catalog, run_ref)
    fact = build(
        "Retraction", {"run": run, "reason": reason, "actor": actor, "at": (at or datetime.now(UTC)).isoformat()}
    )
    publish_manifests(catalog, [fact], actor=actor, source="correction")
    return digest_of(fact)


def supersede(
    catalog: Catalog, new_ref: str, old_ref: str, *, reason: str, actor: str, at: datetime | None = None
) -> str:
    new, old = resolve_run_digest(catalog, new_ref), resolve_run_digest(catalog, old_ref)
    if new == old:
        raise ValueError("a run cannot supersede itself")
    fact = build(
        "Supersession",
        {"new": new, "old": old, "reason": reason, "actor": actor, "at": (at or datetime.now(UTC)).isoformat()},
    )
    publish_manifests(catalog, [fact], actor=actor, source="correction")
    return digest_of(fact)


def approve_install(catalog: Catalog, line: str, *, reason: str, actor: str) -> str:
    """A curator approves the install recipe of a held implementation line (``ki approve``): from the next
    catalog version its install line is shown. Returns the line's operation digest; ValueError names a line that
    is not held."""
    now = datetime.now(UTC)
    with _publishing(catalog) as conn:
        acts = latest_acts(conn)
        act, operation = acts.get(line, (None, ""))
        if act != HELD:
            waiting = sorted(name for name, (a, _) in acts.items() if a == HELD)
            said = "was approved already" if act == APPROVED else "is not awaiting review"
            raise ValueError(f"implementation line {line!r} {said}; awaiting review: {', '.join(waiting) or 'none'}")
        conn.execute(insert(InstallReviewRow).values(line=line, operation=operation, act=APPROVED, actor=actor,
                                                     reason=reason, at=now))
        conn.execute(update(CatalogStateRow).where(CatalogStateRow.id == 1)
                     .values(version=CatalogStateRow.version + 1))
        record_changes(conn, {operation})
    return operation
