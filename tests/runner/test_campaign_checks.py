"""The campaign's checks and tables behind ``ki runner campaign`` (they were bench/ scripts until issue 48): each
command hands its arguments to its module, so its help names the ``ki`` command, and a shipped bundle checks as it
shipped."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelindex.catalog.db import Catalog
from kernelindex.cli import app

DATA = Path(__file__).resolve().parents[2] / "src" / "kernelindex" / "data"
ROPE_V4 = DATA / "verified" / "h200-rope-20261207-v4"
ROPE_V4_KEY = DATA / "runners" / "kernelindex-h200-runner-19.pub"
OTHER_KEY = DATA / "runners" / "kernelindex-h200-runner-1.pub"


@pytest.mark.parametrize("command", ["check", "ceiling-check", "tables", "fidelity", "calibrate"])
def test_each_check_is_a_campaign_command_whose_help_names_it(command: str) -> None:
    listed = CliRunner().invoke(app, ["runner", "campaign", "--help"])
    assert listed.exit_code == 0 and f" {command} " in listed.output
    shown = CliRunner().invoke(app, ["runner", "campaign", command, "--help"])
    assert shown.exit_code == 0, shown.output
    assert f"usage: ki runner campaign {command} " in shown.output.lower()


def test_a_shipped_bundle_checks_against_its_runner_key_and_the_catalog(liger_catalog: Catalog) -> None:
    database = liger_catalog.engine.url.render_as_string(hide_password=False)
    where = [str(ROPE_V4), "--database", database]
    good = CliRunner().invoke(app, ["runner", "campaign", "check", "--pub", str(ROPE_V4_KEY), *where])
    assert good.exit_code == 0, good.output
    assert "63 runs {'passed': 63}" in good.output and "all catalog reference cases: True" in good.output
    assert "PROBLEM" not in good.output
    wrong = CliRunner().invoke(app, ["runner", "campaign", "check", "--pub", str(OTHER_KEY), *where])
    assert wrong.exit_code == 1
    assert "PROBLEM signed by kernelindex-h200-runner-19" in wrong.output and "not kernelindex-h200-runner-1 " in \
        wrong.output


def test_check_compare_pairs_the_runs_of_two_bundles() -> None:
    same = CliRunner().invoke(app, ["runner", "campaign", "check", "compare", str(ROPE_V4), str(ROPE_V4)])
    assert same.exit_code == 0, same.output
    assert "63 runs in both, 63 within 3%, median |diff| 0.00%" in same.output
    older = DATA / "verified" / "h200-rope-20261201-v3"
    moved = CliRunner().invoke(app, ["runner", "campaign", "check", "compare", str(ROPE_V4), str(older)])
    assert moved.exit_code == 0 and "63 runs in both" in moved.output and "63 within" not in moved.output
