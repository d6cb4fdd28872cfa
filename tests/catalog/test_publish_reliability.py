"""Publication under repetition and concurrency (issue 8, defects 2, 4, 12 and 13), on SQLite and
PostgreSQL: trusting a key twice, bootstrap over existing facts, bundles checked by digest,
no-op publications that write nothing, and concurrent publishers that never collide."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import delete, func, select
from typer.testing import CliRunner

from kernelindex.bootstrap import bundle_digest, ensure_bundled_data
from kernelindex.catalog.attestations import attested_bundles
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import AttestationRow, PublicationRow, RunRow, TrustedRunnerRow
from kernelindex.cli import app
from kernelindex.sources.liger import import_liger
from kernelindex.trust.bundles import bundled_bundles, publish_bundle
from kernelindex.trust.keys import bundled_runner_keys

RUNNER_PARTS = ("liger", "verified")  # what these tests are about; the imported sources add ~60,000 runs

runner = CliRunner()
SHIPPED_KEY = Path(__file__).resolve().parents[2] / "src" / "kernelindex" / "data" / "runners"


def _count(catalog: Catalog, table: type) -> int:
    with catalog.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(table)).scalar_one()


def _shipped_pub() -> Path:
    return sorted(SHIPPED_KEY.glob("*.pub"))[0]


def test_trusting_a_key_twice_says_so(empty_catalog: Catalog) -> None:
    args = ["runner", "trust", str(_shipped_pub()), "--database", empty_catalog.url]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "Trusted runner" in first.output
    second = runner.invoke(app, args)
    assert second.exit_code == 0, second.output
    assert "already trusted" in second.output and "Traceback" not in second.output
    again = runner.invoke(app, [*args, "--json"])
    assert json.loads(again.output)["already_trusted"] is True
    assert _count(empty_catalog, TrustedRunnerRow) == 1


def test_bootstrap_after_trusting_the_shipped_key_by_hand(empty_catalog: Catalog) -> None:
    trusted = runner.invoke(app, ["runner", "trust", str(_shipped_pub()), "--database", empty_catalog.url])
    assert trusted.exit_code == 0, trusted.output
    done = ensure_bundled_data(empty_catalog, parts=RUNNER_PARTS)
    assert any("verified bundle" in line for line in done)
    assert _count(empty_catalog, TrustedRunnerRow) == len(list(SHIPPED_KEY.glob("*.pub")))  # each key once
    assert ensure_bundled_data(empty_catalog, parts=RUNNER_PARTS) == []  # every later start: nothing to do


def test_bootstrap_publishes_a_shipped_bundle_the_catalog_lacks(liger_catalog: Catalog) -> None:
    first, *others = bundled_bundles()
    assert others, "the package ships more than one bundle"
    bundled_runner_keys(liger_catalog)
    publish_bundle(liger_catalog, first)  # an older release shipped only this one
    runs_before = _count(liger_catalog, RunRow)
    done = ensure_bundled_data(liger_catalog, parts=RUNNER_PARTS)
    published = [line.split(":")[0] for line in done if line.startswith("verified bundle")]
    assert published == [f"verified bundle {p.name}" for p in others]
    assert attested_bundles(liger_catalog) == {bundle_digest(p) for p in bundled_bundles()}
    assert _count(liger_catalog, RunRow) > runs_before


def test_a_publication_that_adds_nothing_writes_nothing(liger_catalog: Catalog) -> None:
    ensure_bundled_data(liger_catalog, parts=RUNNER_PARTS)
    version, publications = liger_catalog.version(), _count(liger_catalog, PublicationRow)
    for path in bundled_bundles():
        report = publish_bundle(liger_catalog, path)
        assert not report.new
    assert not import_liger(liger_catalog, dry_run=False, actor="test").new
    bundled_runner_keys(liger_catalog)
    assert (liger_catalog.version(), _count(liger_catalog, PublicationRow)) == (version, publications)


def test_attestations_alone_are_a_publication(liger_catalog: Catalog) -> None:
    ensure_bundled_data(liger_catalog, parts=RUNNER_PARTS)
    path = bundled_bundles()[0]
    with liger_catalog.engine.begin() as conn:
        conn.execute(delete(AttestationRow).where(AttestationRow.bundle_digest == bundle_digest(path)))
    version = liger_catalog.version()
    publish_bundle(liger_catalog, path)
    assert liger_catalog.version() == version + 1 and bundle_digest(path) in attested_bundles(liger_catalog)


def _at_once(count: int, work: Callable[[], object]) -> tuple[list[object], list[BaseException]]:
    """Run ``work`` in ``count`` threads released together; each uses its own pooled connection."""
    barrier = threading.Barrier(count)
    results: list[object] = []
    errors: list[BaseException] = []

    def run() -> None:
        barrier.wait()
        try:
            results.append(work())
        except BaseException as exc:  # noqa: BLE001 - the test asserts there are none
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    return results, errors


def test_concurrent_liger_publications_do_not_collide(empty_catalog: Catalog) -> None:
    results, errors = _at_once(2, lambda: import_liger(empty_catalog, dry_run=False, actor="test"))
    assert errors == []
    new_runs = sorted(r.new.get("BenchmarkRun", 0) for r in results)  # type: ignore[attr-defined]
    assert new_runs[0] == 0 < new_runs[1]  # the loser waited, then found every run already there
    assert _count(empty_catalog, RunRow) == new_runs[1] and empty_catalog.version() == 1


def test_three_concurrent_publications_of_one_bundle(liger_catalog: Catalog) -> None:
    bundled_runner_keys(liger_catalog)
    path = bundled_bundles()[0]
    version = liger_catalog.version()
    results, errors = _at_once(3, lambda: publish_bundle(liger_catalog, path))
    assert errors == []
    assert sorted(bool(r.new) for r in results) == [False, False, True]  # type: ignore[attr-defined]
    assert liger_catalog.version() == version + 1


def test_concurrent_cli_publications_report_nothing_new(empty_catalog: Catalog, tmp_path: Path) -> None:
    """Two real ``ki`` processes publishing the same bundle at once (the issue's reproducer)."""
    import subprocess
    import sys

    bundled_runner_keys(empty_catalog)
    import_liger(empty_catalog, dry_run=False, actor="test")
    path = bundled_bundles()[0]
    command = [sys.executable, "-m", "kernelindex.cli", "publish", str(path), "--json", "--database", empty_catalog.url]
    procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    reports = [json.loads(out) for out, _ in outputs]
    assert sorted(bool(r["new"]) for r in reports) == [False, True]
    assert not any("Traceback" in err for _, err in outputs)
