"""Corrections are appended facts, never edits: retractions and supersessions."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import or_, select

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import RunRow
from kernelindex.catalog.publish import publish_manifests
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
