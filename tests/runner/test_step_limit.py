"""A step's time limit (SIGTERM from ``timeout``) keeps the cases already measured: the case in progress is
dropped, the finished ones are the result, and the campaign's record lets the next call measure only the rest
(runner/step_limit.py, bench/campaign.py)."""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from op_cases import ROPE_ORDER, small_workload  # noqa: E402
from runner_fakes import FakeDevice  # noqa: E402
from test_verify_bundle import POLICY, ROPE, _adapter, _environment  # noqa: E402

from kernelindex.domain.manifests import digest_of  # noqa: E402
from kernelindex.runner.campaign import verify_operation  # noqa: E402
from kernelindex.runner.step_limit import CampaignCut, StepLimit  # noqa: E402
from kernelindex.runner.verify import case_label  # noqa: E402


def _cases(n: int) -> list[Any]:
    return [small_workload("rope", {"seq": 8 * (i + 1), "hidden": 64, "q_heads": 4, "kv_heads": 2}, "fp32",
                           ROPE_ORDER) for i in range(n)]


@pytest.fixture
def limit():
    previous = signal.getsignal(signal.SIGTERM)
    yield StepLimit().install()
    signal.signal(signal.SIGTERM, previous)


def _verify(cases: list[Any], limit: StepLimit, on_event) -> Any:
    device = FakeDevice(name="NVIDIA H200")
    return verify_operation(
        ROPE, cases, None, device=device, environment=_environment("NVIDIA H200"),
        runner={"name": "t", "key_id": "sha256:" + "0" * 64}, policy=POLICY, calls_per_sample=10, campaign="t",
        adapters=[_adapter(device, "baseline", 50_000, role="baseline")], on_event=on_event, limit=limit,
    )


def _signal_on(kind: str, index: int):
    def on_event(event: str, data: dict[str, Any]) -> None:
        if event == kind and data.get("index", index) == index:
            os.kill(os.getpid(), signal.SIGTERM)
    return on_event


def test_a_signal_between_cases_stops_before_the_next_one(limit: StepLimit) -> None:
    cases = _cases(3)
    result = _verify(cases, limit, _signal_on("case_done", 0))
    assert result.cut and [case_label(c.workload) for c in result.cases] == [case_label(cases[0])]
    assert {r.spec.workload for r in result.runs()} == {digest_of(cases[0])} and len(result.runs()) == 3


def test_a_signal_inside_a_case_drops_that_case_only(limit: StepLimit) -> None:
    cases = _cases(3)
    seen: list[int] = []

    def on_event(event: str, data: dict[str, Any]) -> None:
        if event == "case":
            seen.append(data["index"])
        if event == "step" and seen == [0, 1]:  # inside case 1, while it is being measured
            os.kill(os.getpid(), signal.SIGTERM)

    result = _verify(cases, limit, on_event)
    assert result.cut and len(result.cases) == 1 and len(result.runs()) == 3
    assert all(r.spec.status == "passed" for r in result.runs())


def test_without_a_signal_every_case_is_measured(limit: StepLimit) -> None:
    result = _verify(_cases(2), limit, None)
    assert not result.cut and len(result.cases) == 2 and not limit.reached


def test_the_cut_is_not_an_exception_an_implementation_can_swallow() -> None:
    assert not issubclass(CampaignCut, Exception)


def _bench_campaign() -> Any:
    path = Path(__file__).resolve().parents[2] / "bench" / "campaign.py"
    spec = importlib.util.spec_from_file_location("bench_campaign", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_campaign"] = module
    spec.loader.exec_module(module)
    return module


class _Result:
    def __init__(self, cut: bool, cases: list[Any]) -> None:
        self.cut = cut
        self.cases = [type("Case", (), {"workload": w})() for w in cases]


def test_the_record_resumes_where_the_cut_stopped(tmp_path: Path) -> None:
    campaign = _bench_campaign()
    cases = _cases(4)
    record = campaign.note_cut({}, "rope", _Result(True, cases[:1]), wrote_bundle=True)
    assert record == {"rope": {"finished": [case_label(cases[0])], "parts": 1}}
    assert campaign.resumed_suffix(record, "rope") == "-r1"  # the next part's bundle sits beside the first
    # cut again inside its first case: nothing new finished, no bundle written, the part count stays
    record = campaign.note_cut(record, "rope", _Result(True, []), wrote_bundle=False)
    assert record["rope"]["parts"] == 1
    record = campaign.note_cut(record, "rope", _Result(True, cases[1:3]), wrote_bundle=True)
    assert record["rope"] == {"finished": sorted(case_label(c) for c in cases[:3]), "parts": 2}
    campaign.write_cut_record(tmp_path, "rope", record)
    assert campaign.cut_record(tmp_path, "rope") == record
    # the operation finishes: it leaves the record, and an empty record leaves no file
    campaign.write_cut_record(tmp_path, "rope", campaign.note_cut(record, "rope", _Result(False, cases[3:]),
                                                                    wrote_bundle=True))
    assert campaign.cut_record(tmp_path, "rope") == {} and not (tmp_path / "cut-rope.json").exists()
