"""Issue 51, item 2: a bundle may reference a catalogued implementation, never redefine it.

The attack: a bundle signed by a trusted runner redeclared ``liger-kernel-rope`` with another pip
package (``liger-kernel-fast==0.8.5``), and the operation page and MCP ``recommend_kernel`` then showed
that install line as Liger's. Each variant below is refused whole over HTTP (422
``implementation_redeclared``, naming the line and what changed) with every catalog table unchanged,
and the install line read back is still the catalogued one; a bundle whose revisions are byte-identical
to the catalogued ones, or a new version of a line that keeps its packages, still publishes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from fleet_helpers import bearer, catalog_state, make_runner, shipped

from kernelindex.catalog.db import Catalog
from kernelindex.domain.manifests import digest_of, manifest_json, parse_manifest
from kernelindex.trust import keys as runner_keys
from kernelindex.trust.bundles import SAMPLES_DIR, publish_bundle, verify_directory, write_bundle
from kernelindex.trust.uploads import pack_bundle

LINE = "liger-kernel-rope"
Change = Callable[[dict[str, Any]], dict[str, Any]]


def _spec(change: Callable[[dict[str, Any]], None]) -> Change:
    def apply(data: dict[str, Any]) -> dict[str, Any]:
        spec = {**data["spec"], "install": {**data["spec"]["install"],
                                            "packages": [dict(p) for p in data["spec"]["install"]["packages"]]}}
        change(spec)
        return {**data, "spec": spec}
    return apply


def _swap_package(spec: dict[str, Any]) -> None:  # the attack of the issue: same version, another package
    spec["install"]["packages"][0]["name"] = "liger-kernel-fast"


def _new_version_other_package(spec: dict[str, Any]) -> None:
    spec["version"] = "9.9.9"
    spec["install"]["packages"] = [{"name": "liger-kernel-fast", "version": "9.9.9"}]


def _new_version_extra_package(spec: dict[str, Any]) -> None:
    spec["version"] = "9.9.9"
    spec["install"]["packages"][0]["version"] = "9.9.9"
    spec["install"]["packages"].append({"name": "evil-helper", "version": "1.0"})


def _other_callable(spec: dict[str, Any]) -> None:
    spec["callable"] = {**spec["callable"], "module": "evil.rope"}


def _by_git(spec: dict[str, Any]) -> None:
    spec["version"] = "9.9.9"
    spec["install"] = {"method": "git", "git_url": "https://evil.example/liger.git", "git_commit": "0" * 40}


def _new_version_same_packages(spec: dict[str, Any]) -> None:
    spec["version"] = "9.9.9"
    spec["install"]["packages"][0]["version"] = "9.9.9"


def _rebundled(tmp: Path, key_path: Path, name: str, change: Change) -> Path:
    """The shipped rope bundle re-signed by ``key_path`` with liger-kernel-rope changed by ``change`` (its
    runs follow the new digest)."""
    source = shipped("rope")
    bundle = verify_directory(source)
    key = runner_keys.load_private_key(key_path)
    key_id = runner_keys.key_id_of(runner_keys.public_key_hex(key))
    renamed: dict[str, str] = {}
    manifests = []
    for manifest in bundle.manifests:
        data = manifest_json(manifest)
        if data["kind"] == "ImplementationRevision" and data["metadata"].get("name") == LINE:
            changed = parse_manifest(change(data), "test")
            renamed[digest_of(manifest)] = digest_of(changed)
            data = manifest_json(changed)
        if data["kind"] == "BenchmarkRun":
            spec = data["spec"]
            data = {**data, "spec": {**spec, "implementation": renamed.get(spec["implementation"],
                                                                           spec["implementation"]),
                                     "runner": {"name": name, "key_id": key_id},
                                     "source": {**spec["source"],  # a run of its own: its own external id
                                                "external_id": f"{spec['source']['external_id']}/{name}"}}}
        manifests.append(parse_manifest(data, "test"))
    out = tmp / f"bundle-{len(list(tmp.iterdir()))}"
    samples = [p.read_bytes() for p in sorted((source / SAMPLES_DIR).iterdir())]
    write_bundle(out, manifests, samples, key=key, runner_name=name)
    return out


CATALOGUED = 'pip install "liger-kernel==0.8.5" "torch==2.11.0" "triton==3.6.0"'


def _install_lines(client: TestClient) -> set[str]:
    """Every install line the implementation's JSON twin shows (one per revision)."""
    page = client.get(f"/api/v1/implementations/{LINE}").json()
    return {revision["install_command"] for revision in page["revisions"]}


@pytest.fixture
def catalogued(fleet_catalog: Catalog) -> Catalog:
    publish_bundle(fleet_catalog, shipped("rope"), actor="pytest")  # liger-kernel-rope 0.8.5, catalogued
    return fleet_catalog


@pytest.mark.parametrize("change", [_swap_package, _new_version_other_package, _new_version_extra_package,
                                    _other_callable, _by_git])
def test_a_bundle_that_redeclares_an_implementation_is_refused(
        change: Callable[[dict[str, Any]], None], catalogued: Catalog, client: TestClient, tokens: dict[str, str],
        tmp_path: Path) -> None:
    key = make_runner(tmp_path, "attacker-runner", catalogued)
    bundle = _rebundled(tmp_path, key, "attacker-runner", _spec(change))
    before = catalog_state(catalogued)
    answer = client.post("/api/v1/bundles", content=pack_bundle(bundle),
                         headers={**bearer(tokens["bundles:write"]), "content-type": "application/gzip"})
    assert answer.status_code == 422, answer.text
    problem = answer.json()
    assert problem["code"] == "implementation_redeclared"
    assert LINE in problem["detail"] and "sha256:" in problem["detail"]
    assert catalog_state(catalogued) == before
    assert _install_lines(client) == {CATALOGUED}


@pytest.mark.parametrize("change", [lambda data: data, _spec(_new_version_same_packages)])
def test_a_bundle_that_references_the_catalogued_implementation_publishes(
        change: Change, catalogued: Catalog, client: TestClient, tokens: dict[str, str], tmp_path: Path) -> None:
    key = make_runner(tmp_path, "honest-runner", catalogued)
    bundle = _rebundled(tmp_path, key, "honest-runner", change)
    answer = client.post("/api/v1/bundles", content=pack_bundle(bundle),
                         headers={**bearer(tokens["bundles:write"]), "content-type": "application/gzip"})
    assert answer.status_code == 201, answer.text
    assert CATALOGUED in _install_lines(client)


def test_a_line_with_no_recipe_takes_a_pip_revision_of_its_curated_projects_packages_only() -> None:
    """FlashInfer-Bench's rows of FlashInfer's wrappers record no install recipe; the runner's revision of the same
    line installs flashinfer-python, a package the curated FlashInfer project declares, and publishes. A package the
    project does not declare, or another method, is still a redeclaration."""
    from kernelindex.catalog.curation import RedeclarationError, _check_revision

    line, project = "flashinfer-batch-decode-paged-gqa-paged-decode-h32-kv8-d128-ps64", "sha256:flashinfer"
    mirrored = {"operation": "sha256:op", "project": project, "version": None, "commit": None,
                "install": {"method": "none", "why_missing": "the source records no install recipe"}}
    runner = {**mirrored, "version": "0.7.4",
              "install": {"method": "pip", "packages": [{"name": "flashinfer-python", "version": "0.7.4"},
                                                    {"name": "torch", "version": "2.11.0"}]}}
    curated = {project: {"flashinfer-python"}}
    assert _check_revision(line, "sha256:new", runner, [mirrored], curated) is True  # a proposal: held if uploaded
    assert _check_revision(line, "sha256:again", runner, [mirrored, runner], curated) is False  # the line has one
    typosquat = {**runner, "install": {"method": "pip", "packages": [{"name": "flashinfer-pyth0n", "version": "1"}]}}
    with pytest.raises(RedeclarationError, match="installs by pip"):
        _check_revision(line, "sha256:evil", typosquat, [mirrored], curated)
    by_git = {**runner, "install": {"method": "git", "git_url": "https://evil.example/fi.git", "git_commit": "0" * 40}}
    with pytest.raises(RedeclarationError, match="installs by git"):
        _check_revision(line, "sha256:evil", by_git, [mirrored], curated)
