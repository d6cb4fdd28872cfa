"""The home page's sources block reads the tallies each publication keeps (``catalog/source_tallies.py``), not a
count of every run (issue 50): after a source's CSV, runner-signed bundles and a correction are published, the
kept tallies are what counting every row again gives, and so is the block the home page shows; the migration
that adds the table fills it with that count. On both backends (SQLite compares stored instants as text,
PostgreSQL as instants)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from alembic import command
from sqlalchemy import select

from kernelindex.catalog.db import Catalog, _alembic_config
from kernelindex.catalog.lifecycle import retract
from kernelindex.catalog.models import ObjectRow
from kernelindex.catalog.source_tallies import counted_tallies, stored_tallies
from kernelindex.domain.manifests import Source
from kernelindex.readmodel.operations import operation_page
from kernelindex.readmodel.pages_home import SourceFreshness, home_page, source_freshness
from kernelindex.trust.bundles import bundled_bundles, publish_bundle
from kernelindex.trust.keys import bundled_runner_keys

FIXED_NOW = datetime(2026, 12, 7, tzinfo=UTC)
BUNDLES = ("h200-sparsemax-20261130", "h200-kl-div-20261130")


def _counted_block(catalog: Catalog) -> list[SourceFreshness]:
    """The sources block built from a count of every run and publication."""
    with catalog.engine.connect() as conn:
        bodies = conn.execute(select(ObjectRow.body).where(ObjectRow.kind == "Source")).scalars().all()
        return source_freshness([Source.model_validate(json.loads(b)) for b in bodies], counted_tallies(conn))


def _kept_equals_counted(catalog: Catalog) -> None:
    with catalog.engine.connect() as conn:
        kept, counted = stored_tallies(conn), counted_tallies(conn)
    assert kept == counted
    assert home_page(catalog, now=FIXED_NOW).sources == _counted_block(catalog)


def test_kept_tallies_are_a_full_count_after_each_publication(liger_catalog: Catalog) -> None:
    _kept_equals_counted(liger_catalog)
    bundled_runner_keys(liger_catalog, actor="pytest")
    shipped = {path.name: path for path in bundled_bundles()}
    for name in BUNDLES:
        publish_bundle(liger_catalog, shipped[name], actor="pytest")
        _kept_equals_counted(liger_catalog)
    leader = operation_page(liger_catalog, "rope", now=FIXED_NOW).ranked[0].run_id
    retract(liger_catalog, leader, reason="bench rig misconfigured", actor="pytest")  # a publication, no run
    _kept_equals_counted(liger_catalog)
    with liger_catalog.engine.connect() as conn:
        tallies = stored_tallies(conn)
    signed = [t for t in tallies.values() if t.runs and not t.reported_runs]
    reported = [t for t in tallies.values() if t.runs and t.reported_runs == t.runs]
    assert signed and reported and all(t.last_observed for t in signed + reported)
    assert any(t.last_published and not t.runs for t in tallies.values())  # a publication's source without runs
    block = {s.name: s for s in home_page(liger_catalog, now=FIXED_NOW).sources}
    assert block["liger-kernel-benchmarks"].reproduction_url and block["liger-kernel-benchmarks"].runs


def test_the_migration_fills_the_tallies_with_a_full_count(liger_catalog: Catalog) -> None:
    bundled_runner_keys(liger_catalog, actor="pytest")
    publish_bundle(liger_catalog, {p.name: p for p in bundled_bundles()}[BUNDLES[0]], actor="pytest")
    with liger_catalog.engine.begin() as connection:
        cfg = _alembic_config()
        cfg.attributes["connection"] = connection
        command.downgrade(cfg, "0011")
        command.upgrade(cfg, "head")
    with liger_catalog.engine.connect() as conn:
        kept, counted = stored_tallies(conn), counted_tallies(conn)
    assert kept == counted and len(kept) >= 3
