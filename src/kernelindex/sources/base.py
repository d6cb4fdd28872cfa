"""What every source shares: transports, snapshots and the import report."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

from kernelindex import registry
from kernelindex.catalog.files import check_regular_file
from kernelindex.domain.canonical import bytes_digest
from kernelindex.domain.manifests import Manifest, Source, build
from kernelindex.policy.source_policy import REFUSED_BY_POLICY, refusal_of

__all__ = ["REFUSED_BY_POLICY", "InputFileError", "SourceRefused", "publishable_policy", "source_manifest"]


class SourceRefused(ValueError):
    """The source policy refuses this source: none of its rows may be stored."""


def publishable_policy(name: str) -> registry.SourcePolicy:
    """The policy of a source whose rows may be published; refuses unknown and refused sources."""
    if refusal := refusal_of(name, registry.refused_sources(), registry.source_policies()):
        raise SourceRefused(f"{refusal}; a new source needs its license, attribution and publish decision there")
    policy = registry.source_policy(name)
    assert policy is not None  # listed, or refusal_of would have refused it
    return policy


def source_manifest(name: str, notice: str | None = None) -> Source:
    """The Source manifest of a publishable source, from its policy entry."""
    policy = publishable_policy(name)
    spec = {"name": policy.name, "url": policy.url, "license": policy.license, "attribution": policy.attribution}
    if notice:
        spec["notice"] = notice
    return build("Source", spec, {"name": policy.name, "title": policy.title})


@dataclass(frozen=True)
class Snapshot:
    content: bytes
    locator: str
    digest: str
    fetched_at: datetime


class Transport(Protocol):
    def fetch(self) -> Snapshot: ...


def shipped(*parts: str) -> Path:
    """A file or folder the package ships under ``kernelindex/data/`` (``shipped("liger", "x.csv")``)."""
    return Path(str(resources.files("kernelindex.data").joinpath(*parts)))


class InputFileError(ValueError):
    """A file an import refuses before reading it: not a regular file, or over its size limit."""


def read_regular_file(path: Path, max_bytes: int) -> bytes:
    """The bytes of ``path``, refused from its directory entry when it is not a regular file (``/dev/zero``,
    a pipe, a directory) or larger than ``max_bytes``, and never reading more than ``max_bytes`` + 1."""
    check_regular_file(path, max_bytes, InputFileError, give="the path of a file", limit_of="this import")
    with path.open("rb") as handle:
        content = handle.read(max_bytes + 1)
    if len(content) > max_bytes:
        raise InputFileError(f"{path} grew past the {max_bytes:,}-byte limit of this import while it was read")
    return content


@dataclass(frozen=True)
class FileTransport:
    """Reads a local file (at most ``max_bytes``, a regular file only); fixtures and the bundled snapshot
    replay offline through it."""

    path: Path
    max_bytes: int = 1024 * 1024 * 1024

    def fetch(self) -> Snapshot:
        content = read_regular_file(self.path, self.max_bytes)
        return Snapshot(content, str(self.path), bytes_digest(content), datetime.now(UTC))


@dataclass
class ImportReport:
    source: str
    locator: str
    snapshot_digest: str
    rows_read: int = 0
    accepted: int = 0
    skipped: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    warnings: list[str] = field(default_factory=list)
    new: Counter = field(default_factory=Counter)
    existing: Counter = field(default_factory=Counter)
    published: bool = False

    def skip(self, reason: str, row: int) -> None:
        self.skipped[reason].append(row)

    @property
    def skipped_total(self) -> int:
        return sum(len(rows) for rows in self.skipped.values())

    def to_json(self) -> dict[str, object]:
        return {
            "source": self.source,
            "locator": self.locator,
            "snapshot_digest": self.snapshot_digest,
            "rows_read": self.rows_read,
            "accepted": self.accepted,
            "skipped_total": self.skipped_total,
            "skipped": {reason: rows for reason, rows in sorted(self.skipped.items())},
            "warnings": self.warnings,
            "new": dict(self.new),
            "existing": dict(self.existing),
            "published": self.published,
        }


def combined_json(reports: list[ImportReport]) -> dict[str, object]:
    """Several files of one source imported together: the totals, and each file's own report."""
    new: Counter = Counter()
    existing: Counter = Counter()
    for report in reports:
        new.update(report.new)
        existing.update(report.existing)
    return {
        "source": reports[0].source if reports else None,
        "rows_read": sum(r.rows_read for r in reports),
        "accepted": sum(r.accepted for r in reports),
        "skipped_total": sum(r.skipped_total for r in reports),
        "new": dict(new),
        "existing": dict(existing),
        "published": all(r.published for r in reports),
        "files": [r.to_json() for r in reports],
    }


M = TypeVar("M", bound=Manifest)


class SharedManifests:
    """A normalizer's memo of the objects many rows share (source, projects, operations, workloads …):
    each key's manifest is built once. Keys start with the manifest's kind, so a kept value is an M."""

    shared: dict[tuple[Any, ...], Manifest]

    def _once(self, key: tuple[Any, ...], make: Callable[[], M]) -> M:
        made = self.shared.get(key)
        if made is None:
            made = self.shared[key] = make()
        return cast(M, made)
