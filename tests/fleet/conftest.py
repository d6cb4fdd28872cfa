"""Fixtures for the write path: a catalog that trusts the shipped runner keys (or test keys), an app
over it, API keys of every scope, and a real server on a free port."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.publish import publish_manifests
from kernelindex.domain.manifests import manifest_json, parse_manifest
from kernelindex.trust import keys as runner_keys
from kernelindex.trust.api_keys import create_key
from kernelindex.trust.bundles import SAMPLES_DIR, bundled_bundles, verify_bundle, write_bundle


@pytest.fixture
def fleet_catalog(empty_catalog: Catalog) -> Catalog:
    runner_keys.bundled_runner_keys(empty_catalog)  # trusts the shipped runner keys
    return empty_catalog


@pytest.fixture
def app(fleet_catalog: Catalog) -> Any:
    from kernelindex.web.app import create_app

    application = create_app(fleet_catalog)
    application.state.lease_seconds = 2.0
    return application


@pytest.fixture
def client(app: Any) -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture
def tokens(fleet_catalog: Catalog) -> dict[str, str]:
    return {scope: create_key(fleet_catalog, name=f"test-{scope.replace(':', '-')}", scope=scope,
                              created_by="pytest")[1]
            for scope in ("bundles:write", "requests:write", "admin")}


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def shipped(operation: str = "rope", day: str = "20261129") -> Path:
    return next(p for p in bundled_bundles() if p.name == f"h200-{operation}-{day}")


def make_runner(tmp: Path, name: str, catalog: Catalog | None = None) -> Path:
    """A fresh runner key (trusted in ``catalog`` when given); returns the private key path."""
    private, _, key = runner_keys.generate(name, tmp / name)
    if catalog is not None:
        publish_manifests(catalog, [key.trusted_runner_manifest(trusted_by="pytest")], actor="pytest")
    return private


def resigned(source: Path, out: Path, key_path: Path, name: str, variant: int) -> Path:
    """The runs of a shipped bundle, re-signed by another runner key; ``variant`` shifts every run's
    observed time so each variant is a distinct set of runs."""
    bundle = verify_bundle(source)
    key = runner_keys.load_private_key(key_path)
    key_id = runner_keys.key_id_of(runner_keys.public_key_hex(key))
    manifests: list[BaseModel] = []
    for manifest in bundle.manifests:
        data = manifest_json(manifest)
        if data["kind"] == "BenchmarkRun":
            data = {**data, "spec": {**data["spec"], "runner": {"name": name, "key_id": key_id},
                                     "observed_at": _shifted(data["spec"]["observed_at"], variant)}}
        manifests.append(parse_manifest(data, "test"))
    samples = [p.read_bytes() for p in sorted((source / SAMPLES_DIR).iterdir())]
    write_bundle(out, manifests, samples, key=key, runner_name=name)
    return out


def _shifted(instant: str, seconds: int) -> str:
    moved = datetime.fromisoformat(instant.replace("Z", "+00:00")) + timedelta(seconds=seconds)
    return moved.strftime("%Y-%m-%dT%H:%M:%SZ")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def live_server(app: Any) -> Iterator[str]:
    """The app served by uvicorn on 127.0.0.1 in a thread (real HTTP, real concurrency)."""
    import uvicorn

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
