"""Bundles sent over HTTP: one gzip-compressed tar archive of a bundle directory.

``pack_bundle`` makes the archive ``ki publish --server`` sends; ``receive_bundle`` unpacks it into a
scratch directory (refusing anything but the bundle's own regular files, and more than the limits),
then verifies and publishes it through ``publish_bundle`` — the code path of ``ki publish``. A bundle
whose digest is already attested in the catalog is a replay: it is verified again and nothing is
written.
"""

from __future__ import annotations

import io
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelindex.catalog.attestations import WRITE_CONFLICTS, bundle_attested
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.publish import PublishError, run_id_of
from kernelindex.domain.manifests import digest_of
from kernelindex.trust.archive import ArchiveError, unpack_archive
from kernelindex.trust.bundles import (
    BundleError,
    UntrustedRunnerError,
    publish_bundle,
    trusted_runner_keys,
    verify_bundle,
)

MAX_ARCHIVE_BYTES = 32 * 1024 * 1024  # compressed, as sent
ARCHIVE_MEDIA_TYPES = ("application/gzip", "application/x-gzip", "application/x-tar")


@dataclass(frozen=True)
class UploadResult:
    bundle: str
    runner: str
    key_id: str
    runs: list[str]
    replayed: bool
    new: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        """The answer to the uploader: the same for the first upload and for every replay, but for
        ``status`` (``published``, or ``already_published`` when this upload wrote nothing)."""
        return {"bundle": self.bundle, "runner": self.runner, "key_id": self.key_id, "runs": self.runs,
                "run_urls": [f"/runs/{r}" for r in self.runs],
                "status": "already_published" if self.replayed else "published"}


def pack_bundle(path: Path) -> bytes:
    """The archive of a bundle directory: its files at the archive's root."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for file in sorted(p for p in Path(path).rglob("*") if p.is_file()):
            tar.add(file, arcname=file.relative_to(path).as_posix(), recursive=False)
    return buffer.getvalue()


def unpack_bundle(data: bytes, into: Path) -> Path:
    """Unpack an uploaded archive within the limits of ``trust/archive.py``: only a bundle's own regular
    files, every header size checked before what it declares is read."""
    if len(data) > MAX_ARCHIVE_BYTES:
        raise ArchiveError(f"the archive is {len(data):,} bytes; the limit is {MAX_ARCHIVE_BYTES:,}")
    unpack_archive(data, into)
    return into


def receive_bundle(catalog: Catalog, data: bytes, *, actor: str) -> UploadResult:
    """Verify and publish an uploaded bundle archive. Raises ArchiveError, BundleError (or its
    NotAMeasurementError, UntrustedRunnerError) or PublishError naming what failed; nothing is written
    then. Messages name files inside the bundle, never the server's scratch directory."""
    with tempfile.TemporaryDirectory(prefix="ki-upload-") as scratch:
        try:
            return _receive(catalog, data, Path(scratch), actor)
        except (BundleError, PublishError) as exc:
            raise _without_scratch(exc, scratch) from None


def _receive(catalog: Catalog, data: bytes, scratch: Path, actor: str) -> UploadResult:
    path = unpack_bundle(data, scratch)
    bundle = verify_bundle(path)
    if bundle.key_id not in trusted_runner_keys(catalog):
        raise UntrustedRunnerError(
            f"the bundle is signed by runner {bundle.runner_name!r} ({bundle.key_id}), which is not a trusted "
            "runner on this server; an operator must run `ki runner trust` for its public key first")
    runs = sorted(run_id_of(digest_of(r)) for r in bundle.runs())
    if bundle_attested(catalog, bundle.digest):
        return UploadResult(bundle.digest, bundle.runner_name, bundle.key_id, runs, True, {})
    report = _publish_with_retry(catalog, path, actor, f"upload {bundle.digest}")
    # a concurrent upload of the same bundle may have published it while this one waited for the lock
    return UploadResult(bundle.digest, bundle.runner_name, bundle.key_id, runs, not report.wrote, dict(report.new))


def _without_scratch(exc: Exception, scratch: str) -> Exception:
    """The same error, its message naming bundle files relative to the bundle (``bundle.json``), not
    as the server's temporary path."""
    message = str(exc).replace(f"{scratch}/", "").replace(scratch, "the uploaded bundle")
    return type(exc)(message)


def _publish_with_retry(catalog: Catalog, path: Path, actor: str, locator: str) -> Any:
    """Concurrent uploads may insert the same shared objects (an operation, a project) at once; the loser
    of that race retries, and then finds them present."""
    for attempt in range(5):
        try:
            return publish_bundle(catalog, path, actor=actor, locator=locator)
        except WRITE_CONFLICTS:
            if attempt == 4:
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")
