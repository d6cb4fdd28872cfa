"""First start: import the bundled real data into an empty catalog. Lives outside catalog/
because it orchestrates sources and trust, which depend on the catalog, not the other way round."""

from __future__ import annotations

import logging

from kernelindex.catalog.db import Catalog
from kernelindex.domain.sources import RUNNER_SOURCE
from kernelindex.readmodel.objects import has_runs
from kernelindex.sources.liger import import_liger
from kernelindex.sources.liger.normalize import SOURCE
from kernelindex.trust.bundles import bundled_bundles, publish_bundle
from kernelindex.trust.keys import bundled_runner_keys

log = logging.getLogger("kernelindex.bootstrap")
BOOTSTRAP_ACTOR = "kernelindex-bootstrap"


def ensure_bundled_data(catalog: Catalog) -> list[str]:
    """Publish the bundled Liger snapshot (and the bundled verified runner bundles, when the
    package ships them) if the catalog has none of it yet. Returns what was imported."""
    done: list[str] = []
    if not has_runs(catalog, SOURCE):
        report = import_liger(catalog, dry_run=False, actor=BOOTSTRAP_ACTOR)
        done.append(f"{SOURCE}: {report.new.get('BenchmarkRun', 0)} runs")
    done.extend(_bundled_verified(catalog))
    return done


def _bundled_verified(catalog: Catalog) -> list[str]:
    if has_runs(catalog, RUNNER_SOURCE):
        return []
    done: list[str] = []
    bundled_runner_keys(catalog)
    for path in bundled_bundles():
        publish_bundle(catalog, path)
        done.append(f"verified bundle {path.name}")
    return done
