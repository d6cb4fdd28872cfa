"""``ki import aiter``: the shipped tables (or a folder of them) → parse → normalize → report →
publish, one transaction. The report counts rows by family and skips by reason."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kernelindex import registry
from kernelindex.catalog.collector import collector_paused
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.publish import publish_manifests
from kernelindex.domain.canonical import bytes_digest
from kernelindex.domain.manifests import Manifest, ManifestError
from kernelindex.sources.aiter.archive import TableFile, bundled_archive_path, bundled_files
from kernelindex.sources.aiter.kinds import RowProblem
from kernelindex.sources.aiter.normalize import SOURCE, Normalizer
from kernelindex.sources.aiter.rows import Rejected, parse_table

Progress = Callable[[int, int], None]


@dataclass
class AiterReport:
    source: str
    locator: str
    snapshot_digest: str
    files: int = 0
    rows_read: int = 0
    accepted: Counter = field(default_factory=Counter)  # family → rows imported
    skipped: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))  # reason → file:line
    gpus: Counter = field(default_factory=Counter)  # environment product → rows
    new: Counter = field(default_factory=Counter)
    existing: Counter = field(default_factory=Counter)
    published: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "source": self.source, "locator": self.locator, "snapshot_digest": self.snapshot_digest,
            "files": self.files, "rows_read": self.rows_read,
            "accepted": sum(self.accepted.values()), "accepted_by_family": dict(sorted(self.accepted.items())),
            "skipped_total": sum(len(v) for v in self.skipped.values()),
            "skipped": {reason: {"rows": len(where), "first": where[:5]} for reason, where in
                        sorted(self.skipped.items(), key=lambda item: -len(item[1]))},
            "gpus": dict(self.gpus.most_common()), "new": dict(self.new), "existing": dict(self.existing),
            "published": self.published,
        }


def normalize_files(files: list[TableFile], report: AiterReport, progress: Progress | None = None) -> list[Manifest]:
    normalizer = Normalizer()
    manifests: list[Manifest] = []
    for number, table in enumerate(files, start=1):
        report.files += 1
        for row in parse_table(table.name, table.content):
            report.rows_read += 1
            if isinstance(row, Rejected):
                report.skipped[row.reason].append(f"{table.name}:{row.line}")
                continue
            try:
                made = normalizer.run(row)
            except (RowProblem, ManifestError) as problem:
                report.skipped[str(problem)].append(f"{table.name}:{row.line}")
                continue
            manifests.extend(made)
            report.accepted[row.family] += 1
            report.gpus[registry.device_product(row.gfx, row.cu_num)] += 1
        if progress:
            progress(number, len(files))
    return manifests


def read_folder(folder: Path) -> list[TableFile]:
    """Tables from a checkout's ``aiter/configs`` (or the staged copy): ``*tuned*.csv`` here and in model_configs/."""
    folders = (folder, folder / "configs", folder / "model_configs")
    paths = [p for sub in folders for p in sorted(sub.glob("*tuned*.csv"))]
    return [TableFile(str(p.relative_to(folder)), p.read_bytes()) for p in paths]


@collector_paused()
def import_aiter(
    catalog: Catalog, path: Path | None = None, *, dry_run: bool, actor: str, progress: Progress | None = None
) -> AiterReport:
    """Import the shipped archive (checked against PROVENANCE.json), or the tables of a folder."""
    if path is not None and path.is_dir():
        files, locator = read_folder(path), str(path)
    else:
        files, locator = bundled_files(path), str(path or bundled_archive_path())
    digest = bytes_digest(b"".join(f.name.encode() + b"\0" + f.content for f in files))
    report = AiterReport(SOURCE, locator, digest)
    manifests = normalize_files(files, report, progress)
    result = publish_manifests(catalog, manifests, actor=actor, source=SOURCE, snapshot_digest=digest,
                               locator=locator, dry_run=dry_run, refused_sources=registry.refused_sources())
    report.new, report.existing, report.published = result.new, result.existing, not dry_run
    return report
