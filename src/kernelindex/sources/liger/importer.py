"""fetch → snapshot → parse → normalize → reconcile → report → publish, for the Liger CSV."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kernelindex import registry
from kernelindex.catalog.collector import collector_paused
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.publish import publish_manifests
from kernelindex.domain.manifests import Manifest, ManifestError
from kernelindex.sources.base import FileTransport, ImportReport, Transport, shipped
from kernelindex.sources.liger.normalize import SOURCE, Normalizer, RowProblem
from kernelindex.sources.liger.parse import DUPLICATE_ROW, Rejected, parse_csv

Progress = Callable[[int, int], None]


MAIN_FILE = "all_benchmark_data.csv"
# The main file, then the two NVIDIA B200 sibling files (cuTile and CuTe-DSL backends).
BUNDLED_FILES = (MAIN_FILE, "all_benchmark_data_cutile.csv", "all_benchmark_data_cutedsl.csv")


def bundled_csv_path(name: str = MAIN_FILE) -> Path:
    return shipped("liger", name)


def bundled_csv_paths() -> list[Path]:
    return [bundled_csv_path(name) for name in BUNDLED_FILES]


def parse_and_normalize(
    content: bytes, report: ImportReport, progress: Progress | None = None, *, file_name: str = MAIN_FILE
) -> list[Manifest]:
    """``file_name`` picks the curated mapping: the sibling files have their own (registry b200.yaml)."""
    normalizer = Normalizer(registry.source_mapping("liger"), file_name=file_name)
    manifests: list[Manifest] = []
    rows = list(parse_csv(content))
    for index, row in enumerate(rows, start=1):
        report.rows_read += 1
        if isinstance(row, Rejected):
            report.skip(row.reason, row.line)
        else:
            try:
                manifests.extend(normalizer.run(row))
                report.accepted += 1
            except (RowProblem, ManifestError) as problem:  # ManifestError: a value no manifest accepts
                report.skip(str(problem), row.line)
        if progress and (index % 100 == 0 or index == len(rows)):
            progress(index, len(rows))
    if duplicates := report.skipped.get(DUPLICATE_ROW):
        shown = ", ".join(map(str, duplicates[:20])) + (f", … ({len(duplicates) - 20:,} more)" if len(duplicates) > 20
                                                         else "")
        report.warnings.append(f"{len(duplicates):,} duplicate row(s) skipped (each identical to an earlier row): "
                               f"rows {shown}")
    if report.accepted == 0:
        report.warnings.append("no row could be imported")
    return manifests


@collector_paused()
def import_liger(
    catalog: Catalog,
    transport: Transport | None = None,
    *,
    dry_run: bool,
    actor: str,
    progress: Progress | None = None,
) -> ImportReport:
    snapshot = (transport or FileTransport(bundled_csv_path())).fetch()
    report = ImportReport(source=SOURCE, locator=snapshot.locator, snapshot_digest=snapshot.digest)
    manifests = parse_and_normalize(snapshot.content, report, progress, file_name=Path(snapshot.locator).name)
    result = publish_manifests(
        catalog,
        manifests,
        actor=actor,
        source=SOURCE,
        snapshot_digest=snapshot.digest,
        locator=snapshot.locator,
        dry_run=dry_run,
        refused_sources=registry.refused_sources(),
    )
    report.new, report.existing, report.published = result.new, result.existing, not dry_run
    return report


def import_liger_files(
    catalog: Catalog,
    paths: list[Path] | None = None,
    *,
    dry_run: bool,
    actor: str,
    progress: Progress | None = None,
) -> list[ImportReport]:
    """Import several Liger CSVs (by default the three bundled files), one publication each."""
    return [
        import_liger(catalog, FileTransport(path), dry_run=dry_run, actor=actor, progress=progress)
        for path in (paths or bundled_csv_paths())
    ]
