"""The derived GPU figures (A10G, RTX 3090 Ti, RTX A6000: pairing.DERIVED_FIGURES) against the shipped
KernelBench timings: no kept entry on those GPUs beats even the lowest plausible figure, and the pairing
check refuses exactly the same levels at both ends of every range — so the policy keeps their runs."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from kernelindex import registry
from kernelindex.domain.gpus import GpuSpec
from kernelindex.sources.kernelbench import read_kernelbench, shipped_path
from kernelindex.sources.kernelbench.importer import _timed
from kernelindex.sources.kernelbench.mapping import Mapper, Placed, entries_of
from kernelindex.sources.kernelbench.pairing import DERIVED_FIGURES, Timed, suspect_levels
from kernelindex.sources.kernelbench.runs import EntryRefused


@pytest.fixture(scope="module")
def placed() -> tuple[Mapper, list[Placed]]:
    data = read_kernelbench(shipped_path().read_bytes(), "shipped")
    mapper = Mapper(data)
    found = []
    for timing in data.timings:
        for entry in entries_of(timing):
            try:
                found.append(mapper.place(entry))
            except (EntryRefused, ValueError):
                continue
    return mapper, found


def _at(end: int) -> dict[str, GpuSpec]:
    """The registry's GPUs with every derived figure at its lowest (0) or highest (1) plausible value."""
    table = dict(registry.gpus())
    for slug, ranges in DERIVED_FIGURES.items():
        gpu = table[slug]
        peaks = {**gpu.peaks_tflops, **{k: r[end] for k, r in ranges.items() if k != "bandwidth"}}
        bandwidth = ranges.get("bandwidth", (gpu.bandwidth_gbps,) * 2)[end]
        table[slug] = dataclasses.replace(gpu, peaks_tflops=peaks, bandwidth_gbps=bandwidth)
    return table


@pytest.fixture
def figures_at(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    def use(end: int) -> None:
        table = _at(end)
        monkeypatch.setattr(registry, "gpu_for_product",
                            lambda product: next((g for g in table.values() if product.strip().lower() in
                                                  (m.lower() for m in g.match)), None))
    yield use


def _timed_at(figures_at: object, end: int, mapper: Mapper, placed: list[Placed]) -> list[Timed]:
    figures_at(end)  # type: ignore[operator]
    return [t for _, t in _timed(mapper, placed)]


def test_verdicts_do_not_depend_on_the_derived_figures(figures_at: object,
                                                       placed: tuple[Mapper, list[Placed]]) -> None:
    mapper, entries = placed
    low, high = (_timed_at(figures_at, end, mapper, entries) for end in (0, 1))
    assert suspect_levels(low).keys() == suspect_levels(high).keys()
    refused = set(suspect_levels(low))
    derived = {t.gpu for t in low} & set(DERIVED_FIGURES)
    assert derived == set(DERIVED_FIGURES)  # every derived GPU has timed entries to check against
    for t in low:  # the lowest plausible figures give the highest floors
        if t.gpu in DERIVED_FIGURES and (t.file, t.level) not in refused and t.floor_ns is not None:
            assert t.mean_ns >= t.floor_ns, (t.file, t.level, t.problem)


def test_b200_fp32_and_tf32_peaks_hold_against_its_timings(monkeypatch: pytest.MonkeyPatch,
                                                            placed: tuple[Mapper, list[Placed]]) -> None:
    """Issue 24's decision: the B200 takes NVIDIA's HGX B200 figures, FP32 75 TFLOPS and TF32 1.1 PFLOPS
    dense (2.2 with sparsity). With them no kept B200 entry is under its floor, and the pairing check
    refuses the same levels as without them (then the FP32 problems had a bandwidth floor only)."""
    mapper, entries = placed
    b200 = registry.gpus()["b200"]
    assert (b200.peaks_tflops["fp32"], b200.peaks_tflops["tf32"]) == (75, 1100)

    def timed_with(gpu: GpuSpec) -> list[Timed]:
        table = {**registry.gpus(), "b200": gpu}
        monkeypatch.setattr(registry, "gpu_for_product",
                            lambda product: next((g for g in table.values() if product.strip().lower() in
                                                  (m.lower() for m in g.match)), None))
        return [t for _, t in _timed(mapper, entries)]

    without = dataclasses.replace(b200, peaks_tflops={k: v for k, v in b200.peaks_tflops.items()
                                                      if k not in ("fp32", "tf32")})
    before, after = timed_with(without), timed_with(b200)
    refused = suspect_levels(after)
    assert refused.keys() == suspect_levels(before).keys()
    kept = [t for t in after if t.gpu == "b200" and (t.file, t.level) not in refused and t.floor_ns is not None]
    assert len(kept) > 1000
    assert all(t.mean_ns >= t.floor_ns for t in kept if t.floor_ns is not None)
    raised = sum(a.floor_ns is not None and b.floor_ns is not None and a.floor_ns > b.floor_ns * 1.01
                 for a, b in zip(after, before, strict=True) if a.gpu == "b200")
    assert raised > 0  # the FP32-bound problems gained a compute floor
