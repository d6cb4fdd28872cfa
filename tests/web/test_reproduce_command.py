"""Issue 43 item 9: every verified run page gives the command that re-measures it. The test parses every runner run's
command and validates it against ``ki verify --help`` and against what ``ki verify`` would accept: the operation the
runner defines, the one workload the prefix selects, the adapter the line names, the region and the protocol."""

from __future__ import annotations

import re
import shlex
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from kernelindex.cli import app as ki
from kernelindex.domain.sources import RUNNER_PROTOCOL_VERSION, RUNNER_SOURCE
from kernelindex.readmodel.operation_data import OperationData
from kernelindex.readmodel.reproduce import reproduce_json

pytest.importorskip("torch")  # the runner's definitions (its adapters) import torch

from kernelindex.runner.adapters import select  # noqa: E402
from kernelindex.runner.campaign import case_regions, operation_def  # noqa: E402

NOW = datetime(2026, 12, 7, tzinfo=UTC)
OPTION = re.compile(r"--[a-z][a-z-]+")


def _help_options() -> set[str]:
    result = CliRunner().invoke(ki, ["verify", "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return set(OPTION.findall(result.output))


def _parse(command: str) -> dict[str, str]:
    words = shlex.split(command)
    assert words[:2] == ["ki", "verify"], command
    pairs = words[2:]
    assert len(pairs) % 2 == 0 and all(w.startswith("--") for w in pairs[::2]), command
    return dict(zip(pairs[::2], pairs[1::2], strict=True))


def test_every_runner_run_carries_a_command_ki_verify_accepts(catalog_operations: dict[str, OperationData]) -> None:
    options = _help_options()
    assert {"--operation", "--workloads", "--impl", "--region", "--protocol-version", "--out"} <= options
    checked = 0
    for slug, data in catalog_operations.items():
        for run in [r for r in data.runs if r.source == RUNNER_SOURCE]:
            shown = reproduce_json(data, run)
            assert shown is not None, run.run_id
            if shown["command"] is None:  # a problem module's run: the page says why, and how instead
                assert "ki verify does not run" in shown["why_no_command"]
                continue
            given = _parse(shown["command"])
            assert set(given) <= options, (run.run_id, set(given) - options)
            op = operation_def(given["--operation"])
            assert given["--operation"] == slug
            (adapter,) = select(op, [given["--impl"]])
            assert adapter.line == data.implementations[run.implementation].metadata.name
            assert case_regions(op, [given["--region"]]) == (data.protocols[run.protocol].spec.timed_region,)
            matches = [w for w in data.workloads if w.removeprefix("sha256:").startswith(given["--workloads"])]
            assert matches == [run.workload], run.run_id
            assert given["--protocol-version"] == data.protocols[run.protocol].spec.harness.version
            assert (shown["note"] is None) == (given["--protocol-version"] == RUNNER_PROTOCOL_VERSION)
            assert shown["install"] and all("==" in pin for pin in shown["install"])
            checked += 1
    assert checked > 500


def test_the_run_page_shows_the_command_and_its_pins(client: TestClient,
                                                     catalog_operations: dict[str, OperationData]) -> None:
    rope = catalog_operations["rope"]
    run = next(r for r in rope.runs if r.source == RUNNER_SOURCE
               and rope.protocols[r.protocol].spec.harness.version == RUNNER_PROTOCOL_VERSION)
    page = client.get(f"/api/v1/runs/{run.run_id}").json()
    command = page["reproduce"]["command"]
    assert command.startswith("ki verify --operation rope --workloads ") and "--protocol-version 4" in command
    assert page["reproduce"]["environment"]["torch"] and page["reproduce"]["code"]["harness"] == "kernelindex-runner v4"
    html = client.get(f"/runs/{run.run_id}").text
    assert "data-reproduce-command" in html and "--protocol-version 4" in html
    reported = next(r for r in rope.runs if r.source != RUNNER_SOURCE)
    assert client.get(f"/api/v1/runs/{reported.run_id}").json()["reproduce"] is None


def test_ki_verify_refuses_a_protocol_version_it_does_not_measure(tmp_path) -> None:  # noqa: ANN001
    result = CliRunner().invoke(ki, ["verify", "--operation", "rope", "--out", str(tmp_path / "b"),
                                     "--protocol-version", "3"])
    assert result.exit_code == 2
    assert "measures protocol v4 only" in result.output
