"""Issue 51's last two holes, on both backends.

1. The install line never comes from a bundle: an implementation line that a runner's *uploaded* bundle
   introduces publishes with its runs, but its install line is held (no page, answer or download shows it;
   "install line awaiting review") until a curator approves it with ``ki approve LINE``. A bundle directory the
   catalog's operator publishes (``ki publish``, the shipped bundles) is curated by that act.
2. A bundle's run may not take the external id a stored run of its source holds: 409
   ``duplicate_external_id``, naming the id and the bundle that holds it, and the catalog unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from fleet_helpers import bearer, catalog_state, make_runner, shipped
from typer.testing import CliRunner

from kernelindex.catalog.db import Catalog
from kernelindex.cli import app as ki
from kernelindex.domain.manifests import digest_of, manifest_json, parse_manifest
from kernelindex.trust import keys as runner_keys
from kernelindex.trust.bundles import SAMPLES_DIR, publish_bundle, verify_directory, write_bundle
from kernelindex.trust.uploads import pack_bundle

pytestmark = pytest.mark.backends("sqlite", "postgresql")
LINE, PROPOSED = "liger-kernel-rope", "liger-kernel-rope-fast"
PROPOSED_INSTALL = 'pip install "liger-kernel-fast==9.9.9"'


def _proposing(data: dict[str, Any]) -> dict[str, Any]:
    """liger-kernel-rope's revision as a new line of another package: a runner's proposal."""
    spec = {**data["spec"], "version": "9.9.9",
            "install": {**data["spec"]["install"], "packages": [{"name": "liger-kernel-fast", "version": "9.9.9"}]}}
    return {**data, "metadata": {**data["metadata"], "name": PROPOSED}, "spec": spec}


def _bundle(tmp: Path, key_path: Path, name: str, *, propose: bool, rename_runs: bool) -> Path:
    """The shipped rope bundle re-signed by ``key_path``: liger's revision proposed as a new line (``propose``),
    its runs with external ids of their own (``rename_runs``) or the shipped runs' ids."""
    source = shipped("rope")
    key = runner_keys.load_private_key(key_path)
    key_id = runner_keys.key_id_of(runner_keys.public_key_hex(key))
    renamed: dict[str, str] = {}
    manifests = []
    for manifest in verify_directory(source).manifests:
        data = manifest_json(manifest)
        if propose and data["kind"] == "ImplementationRevision" and data["metadata"].get("name") == LINE:
            changed = parse_manifest(_proposing(data), "test")
            renamed[digest_of(manifest)] = digest_of(changed)
            data = manifest_json(changed)
        if data["kind"] == "BenchmarkRun":
            spec = data["spec"]
            external = spec["source"]["external_id"] + (f"/{name}" if rename_runs else "")
            data = {**data, "spec": {**spec, "implementation": renamed.get(spec["implementation"],
                                                                           spec["implementation"]),
                                     "runner": {"name": name, "key_id": key_id},
                                     "source": {**spec["source"], "external_id": external}}}
        manifests.append(parse_manifest(data, "test"))
    out = tmp / f"bundle-{name}"
    write_bundle(out, manifests, [p.read_bytes() for p in sorted((source / SAMPLES_DIR).iterdir())], key=key,
                 runner_name=name)
    return out


def _upload(client: TestClient, tokens: dict[str, str], bundle: Path) -> Any:
    return client.post("/api/v1/bundles", content=pack_bundle(bundle),
                       headers={**bearer(tokens["bundles:write"]), "content-type": "application/gzip"})


def _revisions(client: TestClient, line: str) -> list[dict[str, Any]]:
    return client.get(f"/api/v1/implementations/{line}").json()["revisions"]


@pytest.fixture
def catalogued(fleet_catalog: Catalog) -> Catalog:
    publish_bundle(fleet_catalog, shipped("rope"), actor="pytest")  # the operator's act: liger-kernel-rope curated
    return fleet_catalog


def test_an_uploaded_new_line_is_held_until_a_curator_approves_it(
        catalogued: Catalog, client: TestClient, tokens: dict[str, str], tmp_path: Path) -> None:
    key = make_runner(tmp_path, "proposing-runner", catalogued)
    answer = _upload(client, tokens, _bundle(tmp_path, key, "proposing-runner", propose=True, rename_runs=True))
    assert answer.status_code == 201, answer.text
    [held] = _revisions(client, PROPOSED)
    assert held["install_command"] is None and not held["usable"]
    assert [r["code"] for r in held["reasons"]][-1] == "INSTALL_AWAITING_REVIEW"
    page = client.get(f"/implementations/{PROPOSED}").text
    assert "Install line awaiting review" in page and "liger-kernel-fast" not in page
    rows = [r for r in client.get("/api/v1/operations/rope", params={"gpu": "h200"}).json()["ranked"]
            if r["implementation"]["slug"] == PROPOSED]
    assert rows and all(r["implementation"]["install_command"] is None for r in rows)
    assert "liger-kernel-fast" not in client.get("/api/v1/use", params={"q": "rope seq=2048 hidden=8192 bf16 h200"}
                                                 ).text
    assert _revisions(client, LINE)[0]["install_command"].startswith('pip install "liger-kernel==0.8.5"')

    cli = CliRunner()
    approve = ["approve", PROPOSED, "--reason", "liger-kernel-fast 9.9.9 checked on PyPI", "--database", catalogued.url]
    assert cli.invoke(ki, approve).exit_code == 0
    [approved] = _revisions(client, PROPOSED)
    assert approved["install_command"] == PROPOSED_INSTALL  # shown from the next catalog version on
    again = cli.invoke(ki, approve)
    assert again.exit_code == 1 and "was approved already" in again.output
    unknown = cli.invoke(ki, ["approve", "no-such-line", "--reason", "x", "--database", catalogued.url])
    assert unknown.exit_code == 1 and "is not awaiting review" in unknown.output


def test_the_operator_publishing_a_bundle_directory_curates_it(catalogued: Catalog, client: TestClient,
                                                               tmp_path: Path) -> None:
    key = make_runner(tmp_path, "local-runner", catalogued)
    publish_bundle(catalogued, _bundle(tmp_path, key, "local-runner", propose=True, rename_runs=True), actor="pytest")
    assert [r["install_command"] for r in _revisions(client, PROPOSED)] == [PROPOSED_INSTALL]


def test_a_run_reusing_a_stored_external_id_is_refused(catalogued: Catalog, client: TestClient,
                                                       tokens: dict[str, str], tmp_path: Path) -> None:
    key = make_runner(tmp_path, "copying-runner", catalogued)
    before = catalog_state(catalogued)
    answer = _upload(client, tokens, _bundle(tmp_path, key, "copying-runner", propose=False, rename_runs=False))
    assert answer.status_code == 409, answer.text
    problem = answer.json()
    assert problem["code"] == "duplicate_external_id"
    shipped_bundle = verify_directory(shipped("rope"))
    ids = {manifest_json(r)["spec"]["source"]["external_id"] for r in shipped_bundle.runs()}
    assert any(f"external id {i!r}" in problem["detail"] for i in ids)
    assert f"published from bundle {shipped_bundle.digest}" in problem["detail"]
    assert catalog_state(catalogued) == before
    (tmp_path / "own-ids").mkdir()
    own = _upload(client, tokens, _bundle(tmp_path / "own-ids", key, "copying-runner", propose=False, rename_runs=True))
    assert own.status_code == 201, own.text  # the same measurements under their own external ids publish
