"""A lookup never imports (issue 47): on an empty catalog it says what to run and writes nothing; ``ki init``
imports the bundled data it lacks (what ``ki serve`` does on first start), once."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelindex.catalog.db import open_catalog
from kernelindex.catalog.holdings import has_runs
from kernelindex.cli import app as ki

runner = CliRunner()


@pytest.mark.parametrize("args", [["search", "rope", "a100"], ["show", "operation", "rope"], ["records"],
                                  ["use", "rope seq=2048 hidden=8192 bf16 a100"]])
def test_a_lookup_on_an_empty_catalog_says_what_to_run_and_imports_nothing(tmp_path: Path, args: list[str]) -> None:
    url = f"sqlite:///{tmp_path / 'empty.sqlite'}"
    result = runner.invoke(ki, [*args, "--database", url], env={"COLUMNS": "400"})
    assert result.exit_code == 1, result.output
    assert f"run `ki init --database {url}`" in result.output and "holds no runs" in result.output
    catalog = open_catalog(url)
    assert not has_runs(catalog)
    catalog.dispose()


def test_init_imports_the_bundled_parts_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELINDEX_BUNDLED_PARTS", "liger")
    url = f"sqlite:///{tmp_path / 'c.sqlite'}"
    first = runner.invoke(ki, ["init", "--database", url])
    assert first.exit_code == 0, first.output
    assert "Importing Liger-Kernel" in first.output and "Ready: " in first.output
    again = runner.invoke(ki, ["init", "--database", url])
    assert again.exit_code == 0 and "Bundled data already imported." in again.output
    found = runner.invoke(ki, ["search", "rope", "--json", "--database", url])
    assert found.exit_code == 0, found.output
