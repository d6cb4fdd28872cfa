"""Start-up: publish the data shipped with the package that the catalog does not hold yet. Lives
outside catalog/ because it orchestrates sources and trust, which depend on the catalog, not the
other way round.

Each signed bundle is checked on its own, every start, by its digest against the attestations
recorded when it was published, so a bundle added to a later release is published on the first
start after the upgrade. Publishing is idempotent, so facts already present (a runner key trusted
by hand, a bundle published with ``ki publish``) are found and left alone.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

from kernelindex.catalog.db import Catalog
from kernelindex.readmodel.objects import attested_bundles, has_runs
from kernelindex.sources.base import FileTransport
from kernelindex.sources.kernelindex_export import bundled_export_path, import_export
from kernelindex.sources.liger import import_liger_files
from kernelindex.sources.liger.normalize import SOURCE
from kernelindex.trust.bundles import INDEX_FILE, BundleError, bundled_bundles, publish_bundle
from kernelindex.trust.keys import bundled_runner_keys

log = logging.getLogger("kernelindex.bootstrap")
BOOTSTRAP_ACTOR = "kernelindex-bootstrap"
EXPORT_SOURCES = ("flashinfer-bench", "gpumode-kernelbot")


def ensure_bundled_data(catalog: Catalog, say: Callable[[str], None] | None = None) -> list[str]:
    """Publish the bundled Liger files, the publishable part of the KernelIndex catalog export
    (and the bundled verified runner bundles) if the catalog has none of it yet. ``say`` receives
    progress lines. Returns what was imported."""
    say = say or log.info
    done: list[str] = []
    if not has_runs(catalog, SOURCE):
        say("Importing Liger-Kernel's benchmark files…")
        for report in import_liger_files(catalog, dry_run=False, actor=BOOTSTRAP_ACTOR):
            done.append(f"{SOURCE} {report.locator.rsplit('/', 1)[-1]}: {report.new.get('BenchmarkRun', 0)} runs")
            say(f"  {done[-1]}")
    done.extend(_bundled_export(catalog, say))
    done.extend(_bundled_verified(catalog))
    return done


def _bundled_export(catalog: Catalog, say: Callable[[str], None]) -> list[str]:
    if any(has_runs(catalog, source) for source in EXPORT_SOURCES):
        return []
    say("Importing FlashInfer-Bench and GPU MODE KernelBot runs (the KernelIndex catalog export)…")
    shown: set[int] = set()

    def progress(done: int, total: int) -> None:
        quarter = 4 * done // max(total, 1)
        if quarter not in shown:
            shown.add(quarter)
            say(f"  mapped {done:,} of {total:,} runs")

    report = import_export(catalog, FileTransport(bundled_export_path()), dry_run=False, actor=BOOTSTRAP_ACTOR,
                           progress=progress)
    line = f"kernelindex-export: {report.new.get('BenchmarkRun', 0)} runs"
    say(f"  {line}")
    return [line]


def bundle_digest(path: Path) -> str | None:
    """The digest a bundle's index declares (checked in full only when it is published)."""
    try:
        digest = json.loads((path / INDEX_FILE).read_text(encoding="utf-8")).get("digest")
    except (OSError, ValueError, AttributeError):
        return None
    return digest if isinstance(digest, str) else None


def _bundled_verified(catalog: Catalog) -> list[str]:
    attested = attested_bundles(catalog)
    missing = [p for p in bundled_bundles() if bundle_digest(p) not in attested]
    if not missing:
        return []
    bundled_runner_keys(catalog, actor=BOOTSTRAP_ACTOR)
    done: list[str] = []
    for path in missing:
        try:
            report = publish_bundle(catalog, path, actor=BOOTSTRAP_ACTOR)
        except BundleError as exc:  # a damaged install must not keep the site down; say which bundle
            log.error("shipped bundle %s was not published: %s", path.name, exc)
            done.append(f"verified bundle {path.name} refused: {exc}")
            continue
        done.append(f"verified bundle {path.name}: {report.new.get('BenchmarkRun', 0)} new runs")
    return done
