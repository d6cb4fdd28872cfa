"""The reproduction court's rule (policy.reproduction, issue 44): who pairs with whom, Y/X, the verdicts,
the nearest version named, generator-only differences heard as one workload, the differences read from
the two protocols, and "not reproduced" beyond 2× either way."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kernelindex.domain.gpus import GpuDatasheet
from kernelindex.policy.reproduction import Claim, ProtocolFacts, not_reproduced_reason, reproductions

THEIRS = ProtocolFacts("KernelBench timing", "mean", "CUDA events", "not recorded by the source",
                       "none recorded", "")
OURS = ProtocolFacts("kernelindex-runner 4", "median of stream time", "CUDA graph of K calls", "rotating sets ≥ 4× L2",
                     "fresh inputs", "autograd off", runner=True)


def _reported(value: int, **changes: object) -> Claim:
    claim = Claim("r", "kb-1-19-relu-eager", None, "relu 4096x393216", "torch.rand(...)", "NVIDIA H200", "forward",
                  value, THEIRS, False)
    return replace(claim, **changes)  # type: ignore[arg-type]


def _ours(run: str, value: int, **changes: object) -> Claim:
    claim = Claim(run, "kb-1-19-relu-eager", "2.11.0", "relu 4096x393216", "torch.randn(...)", "NVIDIA H200",
                  "forward", value, OURS, True)
    return replace(claim, **changes)  # type: ignore[arg-type]


def test_a_pair_gives_both_figures_the_ratio_and_the_named_differences() -> None:
    court = reproductions([_reported(3_020_000), _ours("v", 3_010_000)])["r"]
    assert (court.reported_ns, court.reproduced_ns, court.twins) == (3_020_000, 3_010_000, ("v",))
    assert court.ratio == pytest.approx(3.01 / 3.02)
    assert court.verdict == "within 10%" and court.reproduced
    fields = {d.field: (d.theirs, d.ours) for d in court.differences}
    assert fields["statistic"] == ("mean", "median of stream time")  # read from the two protocols, never fixed words
    assert fields["input generator"] == ("torch.rand", "torch.randn")  # one workload for the court, named
    assert fields["autograd"] == ("not recorded", "autograd off")
    assert fields["library version"] == ("not recorded by the source", "2.11.0")
    assert court.version == "the source did not record its version; ours 2.11.0"


@pytest.mark.parametrize(("ours", "verdict"), [(1_100, "within 10%"), (910, "within 10%"), (1_500, "within 2×"),
                                               (2_000, "within 2×"), (500, "within 2×"), (2_001, "not reproduced"),
                                               (499, "not reproduced")])
def test_verdicts_are_symmetric_either_way(ours: int, verdict: str) -> None:
    assert reproductions([_reported(1_000), _ours("v", ours)])["r"].verdict == verdict


def test_not_reproduced_names_both_figures_and_unexplained_when_nothing_recorded_can_explain_it() -> None:
    court = reproductions([_reported(2_090_000_000), _ours("v", 3_954_656)])["r"]
    assert not court.reproduced and court.explanation == "unexplained"
    reason = not_reproduced_reason(court)
    assert reason.code == "NOT_REPRODUCED"
    assert "2,090,000,000 ns" in reason.sentence and "3,954,656 ns" in reason.sentence
    versioned = reproductions([_reported(1_000, version="0.3.0"), _ours("v", 3_000, version="0.5.0")])["r"]
    assert "library version: theirs 0.3.0; ours 0.5.0" in versioned.explanation


@pytest.mark.parametrize("change", [{"gpu": "NVIDIA H100"}, {"region": "backward"}, {"line": "kb-1-19-relu-compile"},
                                    {"workload": "relu 4096x1024"}])
def test_no_pair_across_product_region_line_or_shapes(change: dict[str, str]) -> None:
    assert reproductions([_reported(1_000), _ours("v", 1_000, **change)]) == {}


def test_a_verified_run_is_never_heard_and_reported_runs_are_never_twins() -> None:
    assert reproductions([_reported(1_000), _reported(1_000, run="r2")]) == {}
    assert reproductions([_ours("v", 1_000), _ours("w", 2_000)]) == {}


def test_same_version_first_else_the_nearest_named_and_the_median_of_the_twins() -> None:
    twins = [_ours("a", 1_000, version="0.5.2"), _ours("b", 1_200, version="0.5.2"), _ours("c", 9_000, version="0.4.0"),
             _ours("d", 5_000, version="0.6.0")]
    same = reproductions([_reported(1_000, version="0.5.2"), *twins])["r"]
    assert (same.version, same.twins, same.reproduced_ns) == ("same version (0.5.2)", ("a", "b"), 1_100)
    near = reproductions([_reported(1_000, version="0.5.9"), *twins])["r"]  # same minor release first
    assert near.version == "nearest version: theirs 0.5.9, ours 0.5.2" and near.twins == ("a", "b")
    later = reproductions([_reported(1_000, version="0.6.3"), *twins])["r"]
    assert later.version == "nearest version: theirs 0.6.3, ours 0.6.0" and later.twins == ("d",)


def _sheet(short: str, bandwidth: float, bf16: float) -> GpuDatasheet:
    return GpuDatasheet(short.lower(), short, short, "NVIDIA", "sm_90", 80, "SXM5", bandwidth, {"bf16": bf16}, "test")


SHEETS = {"NVIDIA H100 80GB HBM3": _sheet("H100", 3350, 989), "NVIDIA H100 PCIe": _sheet("H100 PCIe", 2000, 756),
          "NVIDIA H200": _sheet("H200", 4800, 989)}
SXM, PCIE = "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe"


def test_a_figure_not_reproduced_is_heard_against_the_sources_own_figure_on_a_gpu_no_faster() -> None:
    """KernelBench's H100 SXM torch.compile figure of 2/23 (2.65 ms) beside its own H100 PCIe figure of the same
    problem file (1.66 ms) and our 0.89 ms: the source contradicts itself, and the court says so."""
    claims = [_reported(2_650_000, gpu=SXM, source="kernelbench"), _ours("v", 890_000, gpu=SXM),
              _reported(1_660_000, run="pcie", gpu=PCIE, source="kernelbench")]
    court = reproductions(claims, SHEETS)["r"]
    assert not court.reproduced
    assert court.explanation == ("the source's own figure of this call on the H100 PCIe, a GPU no faster on paper "
                                 "(2,000 against 3,350 GB/s), is 1.66 ms: faster than this 2.65 ms")
    assert reproductions(claims)["r"].explanation == "unexplained"  # without datasheets nothing is compared
    other_source = [*claims[:2], replace(claims[2], source="someone else")]
    assert reproductions(other_source, SHEETS)["r"].explanation == "unexplained"
    slower_there = [*claims[:2], replace(claims[2], value_ns=2_700_000)]
    assert reproductions(slower_there, SHEETS)["r"].explanation == "unexplained"  # consistent: no contradiction
    other_line = [*claims[:2], replace(claims[2], line="kb-1-19-relu-compile")]
    assert reproductions(other_line, SHEETS)["r"].explanation == "unexplained"


def test_a_figure_too_fast_is_heard_against_the_sources_figure_on_a_gpu_no_slower() -> None:
    claims = [_reported(400_000, gpu=SXM, source="kernelbench"), _ours("v", 1_000_000, gpu=SXM),
              _reported(1_100_000, run="h200", gpu="NVIDIA H200", source="kernelbench")]
    court = reproductions(claims, SHEETS)["r"]
    assert court.explanation.endswith(
        "on the H200, a GPU no slower on paper (4,800 against 3,350 GB/s), is 1.10 ms: slower than this 400.00 µs")
    assert reproductions([*claims[:2], replace(claims[2], gpu=PCIE)], SHEETS)["r"].explanation == "unexplained"
