"""What every source shares: transports, snapshots and the import report."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from kernelindex.domain.canonical import bytes_digest


@dataclass(frozen=True)
class Snapshot:
    content: bytes
    locator: str
    digest: str
    fetched_at: datetime


class Transport(Protocol):
    def fetch(self) -> Snapshot: ...


@dataclass(frozen=True)
class FileTransport:
    """Reads a local file; fixtures and the bundled snapshot replay offline through it."""

    path: Path

    def fetch(self) -> Snapshot:
        content = self.path.read_bytes()
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
