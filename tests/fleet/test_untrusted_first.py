"""Issue 51, item 3: work before trust. A bundle signed by a key this server does not trust is refused
from ``bundle.json`` and ``bundle.sig`` alone, before its manifests are decompressed, hashed or parsed.

The attack: a ~300 KB upload whose ``manifests.jsonl`` decompresses to 48 MiB of manifest lines, correctly
signed by an untrusted key, cost 37 s of CPU and 338 MB before the 422. It is now refused in under 1 s
with under 50 MB allocated (traced), over HTTP as ``untrusted_runner``, and the catalog is unchanged."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

from fastapi.testclient import TestClient
from fleet_helpers import bearer, catalog_state, shipped

from kernelindex.catalog.db import Catalog
from kernelindex.domain.canonical import bytes_digest, canonical_bytes, sha256_digest
from kernelindex.services import writes
from kernelindex.services.problems import Problem
from kernelindex.trust import keys as runner_keys
from kernelindex.trust.uploads import pack_files

MANIFEST_BYTES = 48 * 1024 * 1024


def _stranger_bundle(tmp: Path) -> bytes:
    """A correctly signed bundle of an untrusted key whose manifests.jsonl is 48 MiB of real lines."""
    private, _, _ = runner_keys.generate("stranger", tmp / "stranger")
    key = runner_keys.load_private_key(private)
    public = runner_keys.public_key_hex(key)
    line = (shipped("rope") / "manifests.jsonl").read_bytes().splitlines(keepends=True)[-1]  # a run
    manifests = line * (MANIFEST_BYTES // len(line) + 1)
    index: dict[str, object] = {"format": "kernelindex-bundle/v1", "created_at": "2026-12-06T00:00:00Z",
                                "runner": {"name": "stranger", "key_id": runner_keys.key_id_of(public)},
                                "files": {"manifests.jsonl": bytes_digest(manifests)}}
    index["digest"] = sha256_digest(index)
    sig = {"algorithm": "ed25519", "key_id": runner_keys.key_id_of(public), "public_key": public,
           "signature": key.sign(str(index["digest"]).encode("ascii")).hex()}
    return pack_files({"bundle.json": canonical_bytes(index), "bundle.sig": canonical_bytes(sig),
                       "manifests.jsonl": manifests})


def test_an_untrusted_bundle_is_refused_before_its_manifests_are_read(
        fleet_catalog: Catalog, client: TestClient, tokens: dict[str, str], tmp_path: Path) -> None:
    archive = _stranger_bundle(tmp_path)
    assert len(archive) < 1024 * 1024  # a small upload, as in the issue
    before = catalog_state(fleet_catalog)
    tracemalloc.start()
    started = time.perf_counter()
    try:
        refused = writes.upload(fleet_catalog, archive, actor="pytest")
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(refused, Problem) and refused.code == "untrusted_runner", refused
    assert "stranger" in refused.detail and "ki runner trust" in refused.detail
    assert elapsed < 1.0, elapsed
    assert peak < 50 * 1024 * 1024, peak
    answer = client.post("/api/v1/bundles", content=archive,
                         headers={**bearer(tokens["bundles:write"]), "content-type": "application/gzip"})
    assert answer.status_code == 422 and answer.json()["code"] == "untrusted_runner"
    assert catalog_state(fleet_catalog) == before
