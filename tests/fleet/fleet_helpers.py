"""Helpers of the write-path tests (imported by name: tests/fleet is on sys.path, and a module called
conftest would clash with the other test folders' conftest modules)."""

from __future__ import annotations

import socket
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.publish import publish_manifests
from kernelindex.domain.manifests import digest_of, manifest_json, parse_manifest
from kernelindex.trust import keys as runner_keys
from kernelindex.trust.bundles import SAMPLES_DIR, bundled_bundles, verify_directory, write_bundle


class LeaseClock:
    """The wall clock leases are measured by, moved forward by the test instead of slept through."""

    def __init__(self) -> None:
        self.offset = timedelta(0)

    def advance(self, seconds: float) -> None:
        self.offset += timedelta(seconds=seconds)


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def claim_body(key_path: Path, gpu: str, **changes: object) -> dict[str, object]:
    """A claim signed by the runner key at ``key_path`` (as ``ki runner work`` sends it)."""
    from kernelindex.trust.claims import signed_claim

    return {**signed_claim(runner_keys.load_private_key(key_path), gpu), **changes}


def shipped(operation: str = "rope") -> Path:
    """The independent runner's shipped bundle (rope: 21 runs, embedding: 48; trusted at bootstrap)."""
    return next(p for p in bundled_bundles() if p.name == f"h200-{operation}-20261130-independent-check")


def make_runner(tmp: Path, name: str, catalog: Catalog | None = None) -> Path:
    """A fresh runner key (trusted in ``catalog`` when given); returns the private key path."""
    private, _, key = runner_keys.generate(name, tmp / name)
    if catalog is not None:
        publish_manifests(catalog, [key.trusted_runner_manifest(trusted_by="pytest")], actor="pytest")
    return private


def resigned(source: Path, out: Path, key_path: Path, name: str, variant: int, *, workload: str | None = None,
             observed_at: datetime | None = None) -> Path:
    """The runs of a shipped bundle, re-signed by another runner key; ``variant`` shifts every run's
    observed time so each variant is a distinct set of runs. ``workload`` keeps only the runs of that
    WorkloadCase (and drops the other cases); ``observed_at`` moves every run to that instant (plus
    ``variant`` seconds): a bundle as a runner would have made it now, without a GPU."""
    bundle = verify_directory(source)
    key = runner_keys.load_private_key(key_path)
    key_id = runner_keys.key_id_of(runner_keys.public_key_hex(key))
    manifests: list[BaseModel] = []
    for manifest in bundle.manifests:
        data = manifest_json(manifest)
        if workload and digest_of(manifest) != workload and data["kind"] == "WorkloadCase":
            continue
        if data["kind"] == "BenchmarkRun":
            if workload and data["spec"]["workload"] != workload:
                continue
            when = observed_at.strftime("%Y-%m-%dT%H:%M:%SZ") if observed_at else data["spec"]["observed_at"]
            data = {**data, "spec": {**data["spec"], "runner": {"name": name, "key_id": key_id},
                                     "observed_at": _shifted(when, variant),
                                     "source": _renamed(data["spec"]["source"], name, variant)}}
        manifests.append(parse_manifest(data, "test"))
    samples = [p.read_bytes() for p in sorted((source / SAMPLES_DIR).iterdir())]
    write_bundle(out, manifests, samples, key=key, runner_name=name)
    return out


def _renamed(source: dict[str, Any], runner: str, variant: int) -> dict[str, Any]:
    """Each re-signed run is a run of its own: its own external id (a stored run's id is never reused)."""
    return {**source, "external_id": f"{source['external_id']}/{runner}/{variant}"}


def _shifted(instant: str, seconds: int) -> str:
    moved = datetime.fromisoformat(instant.replace("Z", "+00:00")) + timedelta(seconds=seconds)
    return moved.strftime("%Y-%m-%dT%H:%M:%SZ")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def catalog_state(catalog: Catalog) -> dict[str, int]:
    """The catalog version and the row count of every catalog table (the audit log is not catalog
    data): equal before and after a refused write means the write changed nothing."""
    from sqlalchemy import func, select

    from kernelindex.catalog.models import Base

    with catalog.engine.connect() as conn:
        counts = {name: int(conn.execute(select(func.count()).select_from(table)).scalar_one())
                  for name, table in Base.metadata.tables.items() if name != "audit_log"}
    return {**counts, "version": catalog.version()}
