"""First start: import the bundled real data into an empty catalog. Lives outside catalog/
because it orchestrates sources and trust, which depend on the catalog, not the other way round."""

from __future__ import annotations

import logging

from sqlalchemy import func, select

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import RunRow

log = logging.getLogger("kernelindex.bootstrap")
BOOTSTRAP_ACTOR = "kernelindex-bootstrap"


def has_runs(catalog: Catalog, source: str | None = None) -> bool:
    query = select(func.count()).select_from(RunRow)
    if source:
        query = query.where(RunRow.source == source)
    with catalog.engine.connect() as conn:
        return conn.execute(query).scalar_one() > 0


def ensure_bundled_data(catalog: Catalog) -> list[str]:
    """Publish the bundled Liger snapshot (and the bundled verified runner bundles, when the
    package ships them) if the catalog has none of it yet. Returns what was imported."""
    from kernelindex.sources.liger import import_liger
    from kernelindex.sources.liger.normalize import SOURCE

    done: list[str] = []
    if not has_runs(catalog, SOURCE):
        report = import_liger(catalog, dry_run=False, actor=BOOTSTRAP_ACTOR)
        done.append(f"{SOURCE}: {report.new.get('BenchmarkRun', 0)} runs")
    done.extend(_bundled_verified(catalog))
    return done


def _bundled_verified(catalog: Catalog) -> list[str]:
    try:
        from kernelindex.trust.bundles import bundled_bundles, publish_bundle
        from kernelindex.trust.keys import bundled_runner_keys
    except ImportError:  # the runner's trust package is not installed in this build
        return []
    if has_runs(catalog, "kernelindex-runner"):
        return []
    done: list[str] = []
    bundled_runner_keys(catalog)
    for path in bundled_bundles():
        publish_bundle(catalog, path)
        done.append(f"verified bundle {path.name}")
    return done
