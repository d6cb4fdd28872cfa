"""Which bundled sources a start imports: every one by default (issues 24/25), or the ones
$KERNELINDEX_BUNDLED_PARTS names (the tests' session catalog names the three small ones)."""

from __future__ import annotations

import pytest

from kernelindex.bootstrap import ALL_PARTS, BUNDLED_PARTS, PARTS_VARIABLE, configured_parts


def test_a_fresh_install_imports_every_bundled_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PARTS_VARIABLE, raising=False)
    assert configured_parts() == BUNDLED_PARTS == ALL_PARTS
    assert {"aiter", "kernelbench"} <= set(configured_parts())


def test_the_variable_names_a_smaller_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PARTS_VARIABLE, " liger, verified ")
    assert configured_parts() == ("liger", "verified")


def test_a_part_that_does_not_exist_is_refused_with_the_parts_that_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PARTS_VARIABLE, "liger,aitr")
    with pytest.raises(ValueError, match=r"names aitr, which is not a bundled part; name some of liger, export"):
        configured_parts()
