"""Source policy: the registry decides what may be stored, and every surface showing a source's
data carries its license and attribution."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select

from kernelindex import registry
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import RunRow
from kernelindex.catalog.publish import PublishError, publish_manifests
from kernelindex.domain.manifests import build
from kernelindex.sources.base import ImportReport, SourceRefused, publishable_policy, source_manifest
from kernelindex.sources.liger import parse_and_normalize
from kernelindex.sources.liger.importer import bundled_csv_path


def test_every_policy_is_complete_and_refusals_have_reasons() -> None:
    policies = registry.source_policies()
    assert {"liger-kernel-benchmarks", "flashinfer-bench", "gpumode-kernelbot", "sol-execbench"} <= set(policies)
    for policy in policies.values():
        assert policy.license and policy.license_name and policy.license_url and policy.attribution
        if policy.license.startswith("LicenseRef-"):
            assert policy.license_name != policy.license and policy.license_url.startswith("https://")
    assert policies["sol-execbench"].refused and "redistribution" in policies["sol-execbench"].reason
    assert policies["flashinfer-bench"].decision == "publish_with_attribution"
    assert policies["flashinfer-bench"].license == "Apache-2.0"
    gpumode = policies["gpumode-kernelbot"]
    assert gpumode.license_name == "June 9 Researcher Reciprocity License v1.0"
    assert "GPU Mode and the KernelBot dataset" in gpumode.attribution
    assert "huggingface.co/datasets/GPUMODE/kernelbot-data" in gpumode.attribution


def test_importers_cannot_use_a_refused_or_unknown_source() -> None:
    with pytest.raises(SourceRefused, match="refused by source policy"):
        publishable_policy("sol-execbench")
    with pytest.raises(SourceRefused, match="no entry in the source policy"):
        publishable_policy("someone-elses-leaderboard")
    assert source_manifest("flashinfer-bench").spec.license == "Apache-2.0"


def _liger_manifests() -> list:
    report = ImportReport("liger", "test", "sha256:" + "0" * 64)
    return parse_and_normalize(bundled_csv_path().read_bytes(), report)[:16]


def test_publication_refuses_rows_of_a_refused_source(empty_catalog: Catalog) -> None:
    manifests = _liger_manifests()
    run = next(m for m in manifests if m.kind == "BenchmarkRun")
    spec = run.spec.model_dump(mode="json", exclude_none=True)
    spec["source"] = {**spec["source"], "name": "sol-execbench"}
    refused = build("BenchmarkRun", spec)
    with pytest.raises(PublishError, match="refused by source policy"):
        publish_manifests(empty_catalog, [*manifests, refused], actor="test",
                          refused_sources=registry.refused_sources())
    with empty_catalog.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(RunRow)).scalar_one() == 0


def test_liger_source_manifest_keeps_its_identity() -> None:
    manifests = _liger_manifests()
    source = next(m for m in manifests if m.kind == "Source")
    policy = registry.source_policy("liger-kernel-benchmarks")
    assert source.spec.attribution == policy.attribution and source.spec.license == "BSD-2-Clause"
    assert "LinkedIn Corporation" in (source.spec.notice or "")
    assert not policy.refused


def test_export_prints_each_sources_license_and_attribution(tmp_path) -> None:  # noqa: ANN001
    from typer.testing import CliRunner

    from kernelindex.cli import app

    db = f"sqlite:///{tmp_path / 'c.sqlite'}"
    runner = CliRunner()
    assert runner.invoke(app, ["import", "liger", "--publish", "--file", str(bundled_csv_path()),
                               "--database", db]).exit_code == 0
    out = tmp_path / "export.jsonl"
    result = runner.invoke(app, ["export", "--output", str(out), "--database", db])
    assert result.exit_code == 0
    assert "# source liger-kernel-benchmarks · data license BSD-2-Clause · Benchmark data ©" in result.output
    first = json.loads(out.read_text().splitlines()[0])
    assert first["kind"] == "Source" and first["spec"]["attribution"]


def _jsonl(path, manifests: list) -> None:  # noqa: ANN001
    from kernelindex.domain.manifests import manifest_json

    path.write_text("".join(json.dumps(manifest_json(m)) + "\n" for m in manifests), encoding="utf-8")


def _foreign_run(manifests: list, source: str) -> tuple:
    """A run of ``source`` on an implementation only it uses, and that source's Source manifest."""
    from kernelindex.domain.manifests import digest_of

    run = next(m for m in manifests if m.kind == "BenchmarkRun")
    impl = next(m for m in manifests if m.kind == "ImplementationRevision")
    impl_spec = impl.spec.model_dump(mode="json", exclude_none=True)
    own_impl = build("ImplementationRevision", {**impl_spec, "version": f"9.9.{len(source)}"})
    spec = run.spec.model_dump(mode="json", exclude_none=True)
    spec["source"] = {**spec["source"], "name": source, "external_id": f"{source}/1"}
    spec["implementation"] = digest_of(own_impl)
    source_doc = build("Source", {"name": source, "url": "https://example.org", "license": "Apache-2.0",
                                  "attribution": "x"})
    return build("BenchmarkRun", spec), own_impl, source_doc


def test_jsonl_import_refuses_runs_of_refused_and_unlisted_sources(empty_catalog: Catalog, tmp_path) -> None:  # noqa: ANN001
    from kernelindex.catalog.export import import_jsonl
    from kernelindex.catalog.models import ObjectRow
    from kernelindex.domain.manifests import digest_of

    manifests = _liger_manifests()
    sol = _foreign_run(manifests, "sol-execbench")
    other = _foreign_run(manifests, "someone-elses-leaderboard")
    path = tmp_path / "mixed.jsonl"
    _jsonl(path, [*manifests, *sol, *other])
    report = import_jsonl(empty_catalog, path, actor="test", refused=registry.refused_sources(),
                          listed=registry.source_policies())
    assert dict(report.policy.refused_runs) == {"sol-execbench": 1, "someone-elses-leaderboard": 1}
    assert "redistribution" in report.policy.reasons["sol-execbench"]
    assert "no entry in the source policy" in report.policy.reasons["someone-elses-leaderboard"]
    assert report.policy.refused_objects == {"ImplementationRevision": 2, "Source": 2}
    kept_runs = sum(1 for m in manifests if m.kind == "BenchmarkRun")
    assert report.published.new["BenchmarkRun"] == kept_runs
    with empty_catalog.engine.connect() as conn:
        sources = {s for (s,) in conn.execute(select(RunRow.source))}
        stored = {d for (d,) in conn.execute(select(ObjectRow.digest))}
    assert sources == {"liger-kernel-benchmarks"}
    assert not {digest_of(m) for m in (*sol, *other)} & stored
    assert all(digest_of(m) in stored for m in manifests if m.kind != "BenchmarkRun")


def test_cli_jsonl_import_says_what_the_source_policy_refused(tmp_path) -> None:  # noqa: ANN001
    from typer.testing import CliRunner

    from kernelindex.cli import app

    manifests = _liger_manifests()
    path = tmp_path / "mixed.jsonl"
    _jsonl(path, [*manifests, *_foreign_run(manifests, "sol-execbench")])
    db = f"sqlite:///{tmp_path / 'c.sqlite'}"
    result = CliRunner().invoke(app, ["import", "jsonl", str(path), "--database", db])
    assert result.exit_code == 0, result.output
    assert "refused by source policy: sol-execbench — 1 run(s) not stored" in result.output
    result = CliRunner().invoke(app, ["import", "jsonl", str(path), "--json", "--dry-run", "--database", db])
    body = json.loads(result.output)
    assert body["refused_by_source_policy"]["sol-execbench"]["runs"] == 1
    assert body["new"] == {} and body["existing"]["BenchmarkRun"] >= 1
