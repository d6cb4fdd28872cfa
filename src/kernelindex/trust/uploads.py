"""Bundles sent over HTTP: one gzip-compressed tar archive of a bundle directory.

``pack_files`` makes the archive ``ki publish --server`` sends; ``receive_bundle`` reads it into
memory (refusing anything but the bundle's own regular files, and more than the limits), verifies it
once and publishes the verified bundle through ``publish_verified`` — the code path of ``ki publish``
and of start-up. A bundle whose digest is already attested in the catalog is a replay: it is verified
and nothing is written.
"""

from __future__ import annotations

import io
import os
import tarfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import IO, Any

from kernelindex import urls
from kernelindex.catalog.attestations import bundle_attested
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.publish import run_id_of
from kernelindex.catalog.runners import trusted_runner_keys
from kernelindex.domain.manifests import BenchmarkRun, digest_of
from kernelindex.trust.archive import ArchiveError, Check, unpack_archive
from kernelindex.trust.bundles import (
    BundleError,
    BundleFiles,
    VerifiedBundle,
    check_signer,
    publish_verified,
    read_bundle,
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
                "run_urls": [urls.run(r) for r in self.runs],
                "status": "already_published" if self.replayed else "published"}


def pack_files(files: BundleFiles) -> bytes:
    """The archive of a bundle's files: each at the archive's root by its name in the bundle."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in sorted(files.items()):
            entry = tarfile.TarInfo(name)
            entry.size = len(data)
            tar.addfile(entry, io.BytesIO(data))
    return buffer.getvalue()



def pack_bundle(path: Path) -> bytes:
    """The archive of a bundle directory (a runner's worker uploads it)."""
    return pack_files(read_bundle(path))


def unpack_bundle(data: bytes | IO[bytes], *, signer: Check | None = None) -> dict[str, bytes]:
    """An uploaded archive's bundle files, in memory, within the limits of ``trust/archive.py``: only a
    bundle's own regular files, every header size checked before what it declares is read; ``signer``
    checks the signing key as soon as the index and signature are read."""
    size = len(data) if isinstance(data, bytes) else data.seek(0, os.SEEK_END)
    if size > MAX_ARCHIVE_BYTES:
        raise ArchiveError(f"the archive is {size:,} bytes; the limit is {MAX_ARCHIVE_BYTES:,}")
    if not isinstance(data, bytes):
        data.seek(0)
    return unpack_archive(data, signer=signer)


def receive_bundle(catalog: Catalog, data: bytes | IO[bytes], *, actor: str) -> UploadResult:
    """Verify an uploaded bundle archive once, from memory, and publish what was verified. Raises
    ArchiveError, BundleError (or its NotAMeasurementError, UntrustedRunnerError) or PublishError naming
    what failed; nothing is written then. A bundle already attested in the catalog is a replay: nothing
    is written but the answer is the same."""
    trusted = trusted_runner_keys(catalog)  # checked from bundle.json and bundle.sig, before anything else
    bundle = verify_bundle(unpack_bundle(data, signer=partial(check_signer, trusted=trusted)), trusted=trusted)
    runs = sorted(run_id_of(digest_of(r)) for r in bundle.runs())
    if bundle_attested(catalog, bundle.digest):
        return UploadResult(bundle.digest, bundle.runner_name, bundle.key_id, runs, True, {})
    check_uploaded_runs(catalog, bundle)
    report = publish_verified(catalog, bundle, actor=actor, locator=f"upload {bundle.digest}", curated=False)
    # a concurrent upload of the same bundle may have published it while this one waited for the lock
    return UploadResult(bundle.digest, bundle.runner_name, bundle.key_id, runs, not report.wrote, dict(report.new))


MAX_CLOCK_SKEW = timedelta(hours=1)


def check_uploaded_runs(catalog: Catalog, bundle: VerifiedBundle) -> None:
    """What an uploaded run must also be (BundleError naming the run otherwise): observed no later than
    the server's clock allows (a run dated 2100 was accepted), and the only run of the bundle with its
    external id (two runs shared one). Shipped bundles predate this rule: one of them repeats nine
    external ids, so start-up and ``ki publish`` do not apply it. A stored run's external id is never reused by
    any bundle's run (``catalog/publish.py``, inside the publication transaction)."""
    latest = datetime.now(UTC) + MAX_CLOCK_SKEW
    seen: dict[str, str] = {}
    for run in bundle.runs():
        assert isinstance(run, BenchmarkRun)
        spec, digest = run.spec, digest_of(run)
        if spec.observed_at > latest:
            raise BundleError(f"run {spec.source.external_id}: observed at {spec.observed_at.isoformat()}, later "
                              f"than this server's clock allows ({latest.isoformat()}); check the runner's clock")
        if seen.setdefault(spec.source.external_id, digest) != digest:
            raise BundleError(f"runs {seen[spec.source.external_id]} and {digest} share the external id "
                              f"{spec.source.external_id!r}; each run needs its own")
