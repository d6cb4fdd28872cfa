"""Set-up as a newcomer meets it: bootstrap skips the reinstall when nothing changed, the README's
lookup examples run, and the runner extra leaves the CUDA build of torch to the GPU host."""

from __future__ import annotations

import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelindex.catalog.db import Catalog
from kernelindex.cli import app as ki

ROOT = Path(__file__).resolve().parents[2]


def test_runner_extra_does_not_pin_a_torch_build() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    torch = [d for d in extras["runner"] if d.startswith("torch")]
    assert torch and "==" not in torch[0]
    assert any(d.startswith("torch==") for d in extras["dev"])  # the CPU build the tests run on


@pytest.mark.skipif(not (ROOT / ".venv" / ".kernelindex-install").exists(), reason="needs a bootstrapped .venv")
def test_bootstrap_skips_the_install_when_nothing_changed() -> None:
    stamp = (ROOT / ".venv" / ".kernelindex-install").read_text().split(" extras=")[1].split(" ")[0]
    result = subprocess.run([str(ROOT / "scripts" / "bootstrap-venv"), stamp], capture_output=True, text=True,
                            timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "skipping pip install" in result.stderr


def _readme_lookups() -> list[list[str]]:
    text = (ROOT / "README.md").read_text()
    lines = re.findall(r"^\.venv/bin/ki ((?:search|show|records) [^#\n]*)", text, flags=re.M)
    return [shlex.split(line) for line in lines if "RUN_ID" not in line]


@pytest.mark.parametrize("args", _readme_lookups(), ids=" ".join)
def test_readme_lookup_examples_run(catalog: Catalog, args: list[str]) -> None:
    result = CliRunner().invoke(ki, [*args, "--database", catalog.url], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert len(_readme_lookups()) >= 4
