"""Is a timing file's level really timed on the problems it is paired with? Physics says when not.

The staging pairs each timing file with the problems of the commit that last changed it; upstream
sometimes committed a file generated before the problem files changed. Two checks, per (file, level):

- the floor: a mean below floor-v1 on its GPU for the paired problem's shapes (bytes read and
  written at the datasheet bandwidth, counted FLOPs at the datasheet peak) is impossible for the
  paired shapes; one such entry may be a floor estimate's own error (cuDNN's Winograd does fewer
  FLOPs than the direct count; a warm-L2 timing of a working set the cache holds), so a level is suspect
  when at least ``UNDER_FLOOR_SHARE`` of its timed entries fall under the floor, and an entry under the
  floor in a level that is not suspect is refused on its own (``importer.UNDER_FLOOR``);
- agreement: against another file of the same problem set and configuration on a GPU of the same
  product, the median ratio of the two files' times over their common problems must stay within
  ``DISAGREEMENT``×; a level that disagrees several-fold with every such file while those agree
  with each other is suspect (a lone pair cannot say which side is wrong: both are suspect).

A suspect level is refused (never ranked as if the pairing were known), with the reason.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from math import exp, log
from statistics import median

UNDER_FLOOR_SHARE = 0.10
# GPU figures that are not a datasheet's for that exact part (registry/gpus.yaml says how each was derived),
# with the plausible range of each: (lowest, highest) TFLOP/s or GB/s. Policy: their runs are kept, not
# refused or labelled, because against the raw timings (docs/performance.md, History: "The derived GPU figures") the
# fastest entry on each GPU stays under the lowest value, and the pairing check's verdicts are the same at
# both ends of every range (tests/sources/test_kernelbench_gpu_figures.py); the floors shown for these GPUs
# carry the derivation in the GPU's source line. A figure whose range changes a verdict must not be used so.
DERIVED_FIGURES: dict[str, dict[str, tuple[float, float]]] = {
    # no NVIDIA datasheet: FP32 between the A10's 31.2 and the third-party 35; tensor rates between the
    # GeForce ratios (TF32 = FP32, FP16/BF16 = 2 × FP32) and the A10 datasheet's; bandwidth as the A10's
    "a10g": {"fp32": (31.2, 35.0), "tf32": (31.2, 62.5), "bf16": (62.4, 125.0), "fp16": (62.4, 125.0),
             "bandwidth": (600.0, 600.0)},
    # tensor rates from the GA102 whitepaper's GeForce ratios: at most the professional ratios (× 2)
    "rtx-3090-ti": {"tf32": (40.0, 80.0), "bf16": (80.0, 160.0), "fp16": (80.0, 160.0)},
    # dense TF32 from the whitepaper (the datasheet gives the sparse tensor figure only): at least FP32
    "rtx-a6000": {"tf32": (38.7, 77.4)},
}
DISAGREEMENT = 3.0
MIN_COMMON = 10


@dataclass(frozen=True)
class Timed:
    file: str
    level: str
    problems: str  # the paired problem set
    configuration: str
    gpu: str  # product slug
    problem: str  # problem file digest
    mean_ns: float
    floor_ns: float | None


Key = tuple[str, str]  # (timing file, level)


def _under_floor(timed: list[Timed]) -> dict[Key, str]:
    counts: dict[Key, list[int]] = defaultdict(lambda: [0, 0])
    for t in timed:
        if t.floor_ns is None:
            continue
        count = counts[(t.file, t.level)]
        count[1] += 1
        count[0] += t.mean_ns < t.floor_ns
    return {key: f"{under} of {total} timed entries below the floor of the paired problem's shapes on their GPU"
            for key, (under, total) in counts.items() if total and under / total >= UNDER_FLOOR_SHARE}


def median_ratio(a: dict[str, float], b: dict[str, float]) -> tuple[float, int] | None:
    common = sorted(set(a) & set(b))
    if len(common) < MIN_COMMON:
        return None
    return exp(median(log(a[p] / b[p]) for p in common)), len(common)


def _disagreement(timed: list[Timed]) -> dict[Key, str]:
    groups: dict[tuple[str, str, str, str], dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for t in timed:
        groups[(t.problems, t.level, t.configuration, t.gpu)][t.file][t.problem] = t.mean_ns
    suspect: dict[Key, str] = {}
    for (_, level, _, gpu), files in groups.items():
        names = sorted(files)
        for name in names:
            ratios = [(other, median_ratio(files[name], files[other])) for other in names if other != name]
            known = [(other, r) for other, r in ratios if r is not None]
            if known and all(r[0] > DISAGREEMENT or r[0] < 1 / DISAGREEMENT for _, r in known):
                described = ", ".join(f"{r[0]:.1f}× {other} over {r[1]} problems" for other, r in known)
                suspect[(name, level)] = (f"median time ratio to the same problem set, configuration and GPU "
                                          f"({gpu}): {described}")
    return suspect


def suspect_levels(timed: list[Timed]) -> dict[Key, str]:
    """(timing file, level) → why its pairing with its problem set is suspect."""
    found = _under_floor(timed)
    for key, why in _disagreement(timed).items():
        found[key] = f"{found[key]}; {why}" if key in found else why
    return found
