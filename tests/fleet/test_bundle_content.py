"""A bundle carries a measurement and nothing else (issue 23, item 1).

The attack: a bundle signed by a trusted runner, uploaded with a bundles:write key, also carried a
TrustedRunner manifest for a stranger's key and a Retraction of another runner's run; it published,
the stranger became trusted and the other runner's run showed as retracted. Every such bundle is now
refused whole — by the API (422 ``not_a_measurement``), by ``ki publish`` and by ``write_bundle`` —
naming the manifest's kind and line, and the catalog is exactly as it was."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from fleet_helpers import bearer, catalog_state, make_runner, resigned, shipped
from typer.testing import CliRunner

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.runners import trusted_runner_keys
from kernelindex.domain.manifests import Manifest, build, digest_of, manifest_json, parse_manifest
from kernelindex.registry import load_operation
from kernelindex.trust import keys as runner_keys
from kernelindex.trust.bundles import (
    MEASUREMENT_KINDS,
    SAMPLES_DIR,
    NotAMeasurementError,
    bundled_bundles,
    publish_bundle,
    verify_directory,
    write_bundle,
)
from kernelindex.trust.uploads import pack_bundle

AT = "2026-12-01T12:00:00Z"
Extra = Callable[[str, list[str], str], list[Manifest]]  # (another runner's run, this bundle's runs, stranger)


def _trust(other: str, mine: list[str], stranger: str) -> list[Manifest]:
    return [build("TrustedRunner", {"name": "stranger", "public_key": stranger, "trusted_by": "attacker", "at": AT})]


def _retract(other: str, mine: list[str], stranger: str) -> list[Manifest]:
    return [build("Retraction", {"run": other, "reason": "slow", "actor": "attacker", "at": AT})]


def _supersede(other: str, mine: list[str], stranger: str) -> list[Manifest]:
    return [build("Supersession", {"new": mine[0], "old": other, "reason": "mine is better", "actor": "attacker",
                                   "at": AT})]


def _stray_operation(other: str, mine: list[str], stranger: str) -> list[Manifest]:
    return [load_operation("softmax")]


def _foreign_source(other: str, mine: list[str], stranger: str) -> list[Manifest]:
    return [build("Source", {"name": "liger-kernel", "url": "https://evil.example", "license": "none",
                             "attribution": "not Liger"}, {"name": "liger-kernel"})]


ATTACKS: dict[str, tuple[Extra, str]] = {
    "trust a stranger": (_trust, "a TrustedRunner manifest"),
    "retract another runner's run": (_retract, "a Retraction manifest"),
    "supersede another runner's run": (_supersede, "a Supersession manifest"),
    "carry an object no run references": (_stray_operation, "OperationSpec softmax: no run of the bundle"),
    "rewrite another source's notice": (_foreign_source, "Source liger-kernel: no run of the bundle"),
}


def _hostile(tmp: Path, catalog: Catalog, extra: Extra) -> tuple[Path, str]:
    """A bundle of the rope runs re-signed by a trusted runner, plus ``extra``; the stranger's public key."""
    other = verify_directory(shipped("embedding"))
    publish_bundle(catalog, shipped("embedding"))  # the other runner's runs, to retract or supersede
    key = make_runner(tmp, "lab-runner", catalog)
    honest = resigned(shipped("rope"), tmp / "honest", key, "lab-runner", 0)
    stranger = runner_keys.generate("stranger", tmp / "stranger")[2].public_key
    manifests = verify_directory(honest).manifests
    mine = [digest_of(m) for m in manifests if m.kind == "BenchmarkRun"]
    added = extra(digest_of(other.runs()[0]), mine, stranger)
    samples = [p.read_bytes() for p in sorted((honest / SAMPLES_DIR).iterdir())]
    out = tmp / "hostile"
    with pytest.raises(NotAMeasurementError):  # the signed files are written, then verification refuses them
        write_bundle(out, [*manifests, *added], samples, key=runner_keys.load_private_key(key),
                     runner_name="lab-runner")
    return out, stranger


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_bundle_carrying_more_than_a_measurement_is_refused_whole(
        attack: str, client: TestClient, fleet_catalog: Catalog, tokens: dict[str, str], tmp_path: Path) -> None:
    extra, named = ATTACKS[attack]
    bundle, stranger = _hostile(tmp_path, fleet_catalog, extra)
    before, trusted = catalog_state(fleet_catalog), trusted_runner_keys(fleet_catalog)
    answer = client.post("/api/v1/bundles", content=pack_bundle(bundle),
                         headers={**bearer(tokens["bundles:write"]), "content-type": "application/gzip"})
    assert answer.status_code == 422 and answer.json()["code"] == "not_a_measurement", answer.text
    detail = answer.json()["detail"]
    assert named in detail and "refused" in detail, detail
    assert "ki-upload-" not in detail and "/tmp" not in detail  # never the server's scratch path
    assert catalog_state(fleet_catalog) == before and trusted_runner_keys(fleet_catalog) == trusted
    assert runner_keys.key_id_of(stranger) not in trusted


def test_the_refusal_names_the_kind_and_the_line(fleet_catalog: Catalog, tmp_path: Path) -> None:
    bundle, _ = _hostile(tmp_path, fleet_catalog, _trust)
    lines = (bundle / "manifests.jsonl").read_text().splitlines()
    line = next(n for n, text in enumerate(lines, start=1) if '"kind":"TrustedRunner"' in text)
    with pytest.raises(NotAMeasurementError, match=rf"manifests.jsonl line {line}: a TrustedRunner manifest"):
        verify_directory(bundle)


def test_ki_publish_refuses_it_and_changes_nothing(fleet_catalog: Catalog, tmp_path: Path) -> None:
    from kernelindex.cli import app

    bundle, _ = _hostile(tmp_path, fleet_catalog, _retract)
    before = catalog_state(fleet_catalog)
    url = fleet_catalog.engine.url.render_as_string(hide_password=False)
    result = CliRunner().invoke(app, ["publish", str(bundle), "--database", url])
    assert result.exit_code == 1, result.output
    assert "a Retraction manifest" in result.output and str(bundle) in result.output.replace("\n", "")
    assert catalog_state(fleet_catalog) == before


def test_runs_of_another_source_are_not_a_runner_measurement(fleet_catalog: Catalog, tmp_path: Path) -> None:
    key = make_runner(tmp_path, "lab-runner", fleet_catalog)
    honest_dir = resigned(shipped("rope"), tmp_path / "honest", key, "lab-runner", 0)
    honest = verify_directory(honest_dir)

    def relabelled(manifest: Manifest) -> Manifest:
        data = manifest_json(manifest)
        if data["kind"] == "BenchmarkRun":
            data["spec"]["source"] = {**data["spec"]["source"], "name": "liger-kernel"}
        return parse_manifest(data, "test")

    samples = [p.read_bytes() for p in sorted((honest_dir / SAMPLES_DIR).iterdir())]
    with pytest.raises(NotAMeasurementError, match="source 'liger-kernel'"):
        write_bundle(tmp_path / "relabelled", [relabelled(m) for m in honest.manifests], samples,
                     key=runner_keys.load_private_key(key), runner_name="lab-runner")


def test_every_shipped_bundle_is_only_a_measurement() -> None:
    for path in bundled_bundles():  # verify_directory refuses anything else
        assert set(verify_directory(path).counts()) <= set(MEASUREMENT_KINDS), path.name
