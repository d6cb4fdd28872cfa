"""Shipped supersessions (data/supersessions.jsonl) are applied at start-up as an administrative act
of the package, never as bundle content (issue 23, item 1): idempotent, skipped when a run is not in
the catalog, refused whole when a line is malformed."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from kernelindex.bootstrap import (
    SHIPPED_SUPERSESSION_ACTOR,
    ShippedCorrectionError,
    apply_shipped_supersessions,
    shipped_supersessions,
)
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import SupersessionRow
from kernelindex.domain.manifests import digest_of
from kernelindex.trust.bundles import bundled_bundles, publish_bundle, verify_directory
from kernelindex.trust.keys import bundled_runner_keys

AT = "2026-12-01T12:00:00Z"


def _rope_runs(catalog: Catalog) -> tuple[str, str]:
    """A runner-2 rope run and the independent runner's run of the same workload, both published."""
    bundled_runner_keys(catalog)
    bundles = {p.name: p for p in bundled_bundles()}
    names = ("h200-rope-20261130", "h200-rope-20261130-independent-check")
    runner2, independent = (verify_directory(bundles[name]) for name in names)
    for name in names:
        publish_bundle(catalog, bundles[name])
    return digest_of(runner2.runs()[0]), digest_of(independent.runs()[0])


def _line(new: str, old: str, reason: str = "re-measured with the fixed protocol") -> str:
    return json.dumps({"new": new, "old": old, "reason": reason, "at": AT})


def test_a_shipped_supersession_is_recorded_once_by_the_package(empty_catalog: Catalog) -> None:
    old, new = _rope_runs(empty_catalog)
    text = _line(new, old) + "\n" + _line(new, "sha256:" + "0" * 64) + "\n"
    assert apply_shipped_supersessions(empty_catalog, text) == ["shipped supersessions: 1 recorded"]
    with empty_catalog.engine.connect() as conn:
        rows = conn.execute(select(SupersessionRow.old, SupersessionRow.new, SupersessionRow.actor)).all()
    assert [tuple(r) for r in rows] == [(old, new, SHIPPED_SUPERSESSION_ACTOR)]  # the unknown run is skipped
    version = empty_catalog.version()
    assert apply_shipped_supersessions(empty_catalog, text) == []  # every start: already there, nothing written
    assert empty_catalog.version() == version


@pytest.mark.parametrize(("line", "words"), [
    ('{"new": "sha256:aa", "old": "sha256:bb", "reason": "x", "at": "2026-12-01T00:00:00Z"}', "spec.new: String"),
    ('{"new": "x", "old": "y", "reason": "x"}', "expected exactly the keys"),
    ('{"new": "a", "new": "b", "old": "c", "reason": "d", "at": "e"}', "duplicate key"),
    ("not json", "not a JSON object"),
])
def test_a_malformed_line_is_named_and_applies_nothing(empty_catalog: Catalog, line: str, words: str) -> None:
    old, new = _rope_runs(empty_catalog)
    with pytest.raises(ShippedCorrectionError, match=words):
        shipped_supersessions(_line(new, old) + "\n" + line)  # line 2
    version = empty_catalog.version()
    (said,) = apply_shipped_supersessions(empty_catalog, line + "\n" + _line(new, old))
    assert said.startswith("shipped supersessions refused: supersessions.jsonl line 1")
    assert empty_catalog.version() == version


def test_the_shipped_file_parses_and_names_only_shipped_runs() -> None:
    shipped_runs = {digest_of(r) for p in bundled_bundles() for r in verify_directory(p).runs()}
    for fact in shipped_supersessions():
        assert {fact.spec.new, fact.spec.old} <= shipped_runs, fact.spec
