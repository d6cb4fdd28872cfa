"""Issue 51, item 5: edges. A malformed pax ``size`` is a 422, not a 500; a runner key can be untrusted
(``ki runner untrust``), after which its uploads are refused and its runs are no longer verified."""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from fleet_helpers import bearer, make_runner, resigned, shipped
from typer.testing import CliRunner

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.runners import trusted_runner_keys
from kernelindex.trust import keys as runner_keys
from kernelindex.trust.uploads import pack_bundle


def _pax(size: str) -> bytes:
    record = f"size={size}\n".encode()
    record = f"{len(record) + 3} ".encode() + record
    if len(record) != int(record.split(b" ")[0]):  # the length counts its own digits
        record = f"{len(record) + 1} ".encode() + record.split(b" ", 1)[1]
    info = tarfile.TarInfo("././@PaxHeader")
    info.size, info.type = len(record), tarfile.XHDTYPE
    entry = tarfile.TarInfo("bundle.json")
    return info.tobuf(tarfile.USTAR_FORMAT) + record.ljust(512, b"\0") + entry.tobuf(tarfile.USTAR_FORMAT)


@pytest.mark.parametrize("size", ["²", "①", "12a", "-1", "1e3"])
def test_a_malformed_pax_size_is_a_422(client: TestClient, tokens: dict[str, str], size: str) -> None:
    answer = client.post("/api/v1/bundles", content=_pax(size),
                         headers={**bearer(tokens["bundles:write"]), "content-type": "application/x-tar"})
    assert answer.status_code == 422, answer.text
    assert answer.json()["code"] == "archive_invalid" and "pax" in answer.json()["detail"]


def test_an_untrusted_key_publishes_nothing_more(client: TestClient, fleet_catalog: Catalog,
                                                 tokens: dict[str, str], tmp_path: Path) -> None:
    from kernelindex.cli import app

    key = make_runner(tmp_path, "leaky-runner", fleet_catalog)
    key_id = runner_keys.key_id_of(runner_keys.public_key_hex(runner_keys.load_private_key(key)))
    upload = {**bearer(tokens["bundles:write"]), "content-type": "application/gzip"}
    first = resigned(shipped("rope"), tmp_path / "one", key, "leaky-runner", 0)
    assert client.post("/api/v1/bundles", content=pack_bundle(first), headers=upload).status_code == 201
    version = fleet_catalog.version()
    result = CliRunner().invoke(app, ["runner", "untrust", key_id, "--reason", "key leaked",
                                      "--database", fleet_catalog.url])
    assert result.exit_code == 0 and "no longer trusted" in " ".join(result.output.split()), result.output
    assert key_id not in trusted_runner_keys(fleet_catalog) and fleet_catalog.version() == version + 1
    second = resigned(shipped("rope"), tmp_path / "two", key, "leaky-runner", 1)
    refused = client.post("/api/v1/bundles", content=pack_bundle(second), headers=upload)
    assert refused.status_code == 422 and refused.json()["code"] == "untrusted_runner"
    again = CliRunner().invoke(app, ["runner", "untrust", key_id, "--reason", "twice", "--database",
                                     fleet_catalog.url])
    assert again.exit_code == 1 and "not trusted here" in " ".join(again.output.split())


def _rewritten(tmp: Path, key: Path, name: str, change: Any) -> Path:
    """The shipped rope bundle re-signed by ``key``, each run's spec passed through ``change(index, spec)``."""
    from kernelindex.domain.manifests import manifest_json, parse_manifest
    from kernelindex.trust.bundles import SAMPLES_DIR, verify_directory, write_bundle

    source = shipped("rope")
    signer = runner_keys.load_private_key(key)
    key_id = runner_keys.key_id_of(runner_keys.public_key_hex(signer))
    manifests, index = [], 0
    for manifest in verify_directory(source).manifests:
        data = manifest_json(manifest)
        if data["kind"] == "BenchmarkRun":
            spec = {**data["spec"], "runner": {"name": name, "key_id": key_id}}
            data, index = {**data, "spec": change(index, spec)}, index + 1
        manifests.append(parse_manifest(data, "test"))
    out = tmp / f"rewritten-{len(list(tmp.iterdir()))}"
    write_bundle(out, manifests, [p.read_bytes() for p in sorted((source / SAMPLES_DIR).iterdir())], key=signer,
                 runner_name=name)
    return out


@pytest.mark.parametrize(("change", "words"), [
    (lambda i, spec: {**spec, "observed_at": "2100-01-01T00:00:00Z"}, "later than this server's clock allows"),
    (lambda i, spec: {**spec, "source": {**spec["source"], "external_id": "same"}}, "share the external id 'same'"),
])
def test_a_run_from_the_future_or_sharing_an_external_id_is_refused(
        client: TestClient, fleet_catalog: Catalog, tokens: dict[str, str], tmp_path: Path, change: Any,
        words: str) -> None:
    key = make_runner(tmp_path, "odd-runner", fleet_catalog)
    bundle = _rewritten(tmp_path, key, "odd-runner", change)
    version = fleet_catalog.version()
    answer = client.post("/api/v1/bundles", content=pack_bundle(bundle),
                         headers={**bearer(tokens["bundles:write"]), "content-type": "application/gzip"})
    assert answer.status_code == 422 and answer.json()["code"] == "bundle_invalid", answer.text
    assert words in answer.json()["detail"]
    assert fleet_catalog.version() == version


def test_a_summary_replaced_by_an_older_one_is_computed_not_a_500(client: TestClient,
                                                                  fleet_catalog: Catalog) -> None:
    """Two workers storing one operation's summary at once: the one with the older version wrote last, so
    none is stored at the version a reader holds. The reader computes it (it was NoResultFound: /challenges
    answered 500 during large concurrent publications)."""
    from sqlalchemy import select, update

    from kernelindex.catalog.models import OperationSummaryRow
    from kernelindex.readmodel import summaries
    from kernelindex.trust.bundles import publish_bundle

    publish_bundle(fleet_catalog, shipped("rope"))
    summaries.ensure_summaries(fleet_catalog)
    with fleet_catalog.engine.begin() as conn:
        version, cohorts, workloads = conn.execute(select(
            OperationSummaryRow.version, OperationSummaryRow.cohorts, OperationSummaryRow.workloads).where(
            OperationSummaryRow.operation == "rope")).one()
        conn.execute(update(OperationSummaryRow).where(OperationSummaryRow.operation == "rope")
                     .values(version=version - 1))
    assert summaries._part(fleet_catalog, "rope", version, OperationSummaryRow.cohorts) == cohorts.encode()
    assert summaries._part(fleet_catalog, "rope", version, OperationSummaryRow.workloads) == workloads.encode()
    assert client.get("/challenges").status_code == 200
