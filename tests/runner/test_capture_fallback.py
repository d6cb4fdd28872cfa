"""A call that cannot be captured in a CUDA graph is timed with per-call events, and says so."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from runner_fakes import FailingCaptureDevice, FakeSampler  # noqa: E402
from test_verify_bundle import POLICY, ROPE, _adapter, _environment  # noqa: E402

from kernelindex.runner.campaign import outcome_rows, verify_operation  # noqa: E402
from kernelindex.runner.timing import sampler_with_fallback  # noqa: E402


def test_capture_failure_falls_back_with_the_reason() -> None:
    def graph(call):
        raise RuntimeError("CUDA error: operation not permitted when stream is capturing")

    cleaned = []
    sampler = sampler_with_fallback(lambda: None, graph, lambda c: FakeSampler(c, None, 1, []),
                                    on_failure=lambda: cleaned.append(True))
    assert isinstance(sampler, FakeSampler) and cleaned == [True]
    assert sampler.fallback_reason.startswith("RuntimeError: CUDA error: operation not permitted")


def test_capture_success_keeps_the_graph() -> None:
    graph_sampler = FakeSampler(lambda: None, None, 1, [])
    assert sampler_with_fallback(lambda: None, lambda c: graph_sampler, lambda c: None) is graph_sampler


def test_runs_timed_after_a_failed_capture_say_per_call_events(rope_case) -> None:
    device = FailingCaptureDevice(name="NVIDIA H200")
    result = verify_operation(
        ROPE, [rope_case], None, device=device, environment=_environment("NVIDIA H200"),
        runner={"name": "t", "key_id": "sha256:" + "0" * 64}, policy=POLICY, calls_per_sample=10, campaign="t",
        adapters=[_adapter(device, "baseline", 50_000, role="baseline")],
    )
    rows = outcome_rows(result)
    assert {r["region"] for r in rows} == {"forward", "backward", "forward+backward"}
    assert all(r["status"] == "passed" and r["method"] == "per_call_events" for r in rows)
    for run in result.runs():
        assert run.spec.timing.method == "per_call_events"
        assert "not permitted when stream is capturing" in run.spec.timing.raw["capture_failure"]
        assert run.spec.timing.host_ns == 4_000  # host time recorded beside the events figure
