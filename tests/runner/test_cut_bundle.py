"""A step cut by its time limit ships the cases it finished: its bundle carries those cases' runs and only
the objects they reference, never the cases it planned and did not reach (the H200 call of 2026-12-02 whose
gqa-paged-decode-h32-kv8-d128-ps64 bundle was refused for an unmeasured WorkloadCase)."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from runner_fakes import FakeDevice  # noqa: E402
from test_step_limit import _cases  # noqa: E402
from test_verify_bundle import POLICY, ROPE, _adapter, _environment, runner_key  # noqa: E402,F401

from kernelindex.domain.manifests import digest_of  # noqa: E402
from kernelindex.runner.campaign import verify_operation, write_result_bundle  # noqa: E402
from kernelindex.runner.step_limit import StepLimit  # noqa: E402
from kernelindex.trust.bundles import verify_directory  # noqa: E402
from kernelindex.trust.content import NotAMeasurementError, check_measured, measurement_only  # noqa: E402


@pytest.fixture
def cut_after_first_case(runner_key):  # noqa: F811 (the fixture imported above)
    private, key = runner_key
    previous = signal.getsignal(signal.SIGTERM)
    limit = StepLimit().install()
    cases = _cases(3)

    def on_event(event: str, data: dict[str, Any]) -> None:
        if event == "case_done" and data["index"] == 0:
            os.kill(os.getpid(), signal.SIGTERM)

    device = FakeDevice(name="NVIDIA H200")
    try:
        result = verify_operation(
            ROPE, cases, None, device=device, environment=_environment("NVIDIA H200"),
            runner={"name": key.name, "key_id": key.key_id}, policy=POLICY, calls_per_sample=10, campaign="t",
            adapters=[_adapter(device, "baseline", 50_000, role="baseline")], on_event=on_event, limit=limit,
        )
    finally:
        signal.signal(signal.SIGTERM, previous)
    return result, cases, private, key


def test_the_cut_result_plans_cases_it_did_not_measure(cut_after_first_case) -> None:
    result, cases, _, _ = cut_after_first_case
    assert result.cut
    with pytest.raises(NotAMeasurementError, match="no run of the bundle references it"):
        check_measured(result.manifests)
    assert {digest_of(m) for m in measurement_only(result.manifests)} >= {digest_of(cases[0])}
    assert not {digest_of(m) for m in measurement_only(result.manifests)} & {digest_of(c) for c in cases[1:]}


def test_a_cut_steps_bundle_verifies_with_the_finished_case_only(cut_after_first_case, tmp_path: Path) -> None:
    result, cases, private, key = cut_after_first_case
    write_result_bundle(result, tmp_path / "bundle", private, key.name)
    bundle = verify_directory(tmp_path / "bundle")
    workloads = [m for m in bundle.manifests if m.kind == "WorkloadCase"]
    assert [digest_of(w) for w in workloads] == [digest_of(cases[0])]
    assert len(bundle.runs()) == 3 and {r.spec.workload for r in bundle.runs()} == {digest_of(cases[0])}
