"""Statistics of timing samples. Pure Python: no torch, no numpy, so it is testable anywhere."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054


def quantile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's and torch.quantile's default)."""
    if not values:
        raise ValueError("quantile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} is outside [0, 1]")
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median_ci95(values: Sequence[float]) -> tuple[float, float]:
    """Distribution-free 95% confidence interval of the median from order statistics.

    Ranks n/2 ∓ 1.96·√n/2 (normal approximation of the binomial), clamped to the sample.
    """
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        raise ValueError("confidence interval of no values")
    half_width = Z95 * math.sqrt(n) / 2
    low = max(0, math.floor(n / 2 - half_width) - 1)
    high = min(n - 1, math.ceil(n / 2 + half_width))
    return ordered[low], ordered[high]


def mad(values: Sequence[float]) -> float:
    """Median absolute deviation from the median (unscaled)."""
    center = statistics.median(values)
    return statistics.median(abs(v - center) for v in values)


def relative_standard_error(values: Sequence[float]) -> float:
    """Standard error of the mean over the mean; infinite when it cannot be estimated."""
    if len(values) < 2:
        return math.inf
    mean = statistics.fmean(values)
    if mean <= 0:
        return math.inf
    return statistics.stdev(values) / math.sqrt(len(values)) / mean


@dataclass(frozen=True)
class Summary:
    samples: int
    median: float
    p20: float
    p80: float
    mad: float
    ci95_low: float
    ci95_high: float
    rse: float

    def as_ns(self) -> dict[str, int]:
        return {
            "median_ns": round(self.median), "p20_ns": round(self.p20), "p80_ns": round(self.p80),
            "mad_ns": round(self.mad), "ci95_low_ns": round(self.ci95_low), "ci95_high_ns": round(self.ci95_high),
        }


def summarize(values: Sequence[float]) -> Summary:
    low, high = median_ci95(values)
    return Summary(
        samples=len(values), median=statistics.median(values), p20=quantile(values, 0.2),
        p80=quantile(values, 0.8), mad=mad(values), ci95_low=low, ci95_high=high,
        rse=relative_standard_error(values),
    )
