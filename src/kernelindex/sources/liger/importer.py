"""fetch → snapshot → parse → normalize → reconcile → report → publish, for the Liger CSV."""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from pathlib import Path

from kernelindex import registry
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.publish import publish_manifests
from kernelindex.domain.manifests import Manifest
from kernelindex.sources.base import FileTransport, ImportReport, Transport
from kernelindex.sources.liger.normalize import SOURCE, Normalizer, RowProblem
from kernelindex.sources.liger.parse import Rejected, parse_csv

Progress = Callable[[int, int], None]


def bundled_csv_path() -> Path:
    return Path(str(resources.files("kernelindex.data").joinpath("liger", "all_benchmark_data.csv")))


def parse_and_normalize(content: bytes, report: ImportReport, progress: Progress | None = None) -> list[Manifest]:
    normalizer = Normalizer(registry.source_mapping("liger"))
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
            except RowProblem as problem:
                report.skip(str(problem), row.line)
        if progress and (index % 100 == 0 or index == len(rows)):
            progress(index, len(rows))
    if report.accepted == 0:
        report.warnings.append("no row could be imported")
    return manifests


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
    manifests = parse_and_normalize(snapshot.content, report, progress)
    result = publish_manifests(
        catalog,
        manifests,
        actor=actor,
        source=SOURCE,
        snapshot_digest=snapshot.digest,
        locator=snapshot.locator,
        dry_run=dry_run,
    )
    report.new, report.existing, report.published = result.new, result.existing, not dry_run
    return report
